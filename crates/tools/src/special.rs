//! What kind of file a directory entry or an open handle is: regular files are read and
//! written; FIFOs, sockets and devices never are (opening or reading one can block
//! forever or never end).

/// The kind of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// A regular file.
    File,
    /// A folder.
    Folder,
    /// A symbolic link (not followed).
    Symlink,
    /// A FIFO (named pipe).
    Fifo,
    /// A socket.
    Socket,
    /// A block or character device.
    Device,
    /// Anything else.
    Other,
}

impl FileKind {
    /// The kind in words, with an article ("a FIFO (named pipe)").
    pub(crate) fn described(self) -> &'static str {
        match self {
            FileKind::File => "a regular file",
            FileKind::Folder => "a folder",
            FileKind::Symlink => "a symbolic link",
            FileKind::Fifo => "a FIFO (named pipe)",
            FileKind::Socket => "a socket",
            FileKind::Device => "a device",
            FileKind::Other => "a special file",
        }
    }
}

/// A file type that can say its [`FileKind`].
pub(crate) trait Kind {
    /// The kind.
    fn kind(&self) -> FileKind;
}

impl Kind for std::fs::FileType {
    fn kind(&self) -> FileKind {
        use std::os::unix::fs::FileTypeExt;
        classify(
            self.is_file(),
            self.is_dir(),
            self.is_symlink(),
            self.is_fifo(),
            self.is_socket(),
            self.is_block_device() || self.is_char_device(),
        )
    }
}

impl Kind for cap_std::fs::FileType {
    fn kind(&self) -> FileKind {
        use cap_std::fs::FileTypeExt;
        classify(
            self.is_file(),
            self.is_dir(),
            self.is_symlink(),
            self.is_fifo(),
            self.is_socket(),
            self.is_block_device() || self.is_char_device(),
        )
    }
}

fn classify(
    file: bool,
    folder: bool,
    symlink: bool,
    fifo: bool,
    socket: bool,
    device: bool,
) -> FileKind {
    match (file, folder, symlink, fifo, socket, device) {
        (true, ..) => FileKind::File,
        (_, true, ..) => FileKind::Folder,
        (_, _, true, ..) => FileKind::Symlink,
        (_, _, _, true, ..) => FileKind::Fifo,
        (_, _, _, _, true, _) => FileKind::Socket,
        (.., true) => FileKind::Device,
        _ => FileKind::Other,
    }
}

/// The kind of a file type (std or cap-std).
pub(crate) fn kind_of(t: &impl Kind) -> FileKind {
    t.kind()
}
