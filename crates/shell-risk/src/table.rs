//! The read-only programs a safe command may run, as data: one entry per program with its
//! allowed options (GNU spellings), its forbidden options with the reason, and what its
//! operands are. Anything not listed is not safe. `echo`, `true`, `false`, `test`, `find`,
//! `xxd`, `sed` and `git` are judged by their own code (see `programs`, `sed`, `git`).
//!
//! This file lists the programs that show files and folders; `table_text` those that
//! search, filter and compare text, and those that print facts about the system.

use super::spec::{Operands, Parser, Spec, NONE};

const SUMS: Spec = Spec {
    name: "md5sum",
    flags: "btz",
    long_flags: &["binary", "text", "tag", "zero", "help", "version"],
    forbidden: &[
        ("-c", "reads the files a checksum list names"),
        ("--check", "reads the files a checksum list names"),
    ],
    ..NONE
};

/// The table.
/// Programs that show files and folders.
pub(super) const FILES: &[Spec] = &[
    Spec {
        name: "cat",
        flags: "AbeEnstTuv",
        long_flags: &[
            "show-all",
            "number-nonblank",
            "show-ends",
            "number",
            "squeeze-blank",
            "show-tabs",
            "show-nonprinting",
            "help",
            "version",
        ],
        ..NONE
    },
    Spec {
        name: "head",
        flags: "qvz",
        values: "cn",
        long_flags: &[
            "quiet",
            "silent",
            "verbose",
            "zero-terminated",
            "help",
            "version",
        ],
        long_values: &["bytes", "lines"],
        numbers: true,
        obsolete: true,
        ..NONE
    },
    Spec {
        name: "tail",
        flags: "qvz",
        values: "cn",
        long_flags: &[
            "quiet",
            "silent",
            "verbose",
            "zero-terminated",
            "help",
            "version",
        ],
        long_values: &["bytes", "lines"],
        forbidden: &[
            ("-f", "waits for more input forever"),
            ("-F", "waits for more input forever"),
            ("--follow", "waits for more input forever"),
            ("--retry", "waits for files to appear"),
            ("-s", "only matters when following"),
            ("--sleep-interval", "only matters when following"),
            ("--pid", "only matters when following"),
        ],
        numbers: true,
        obsolete: true,
        ..NONE
    },
    Spec {
        name: "wc",
        flags: "clLmw",
        long_flags: &[
            "bytes",
            "chars",
            "lines",
            "max-line-length",
            "words",
            "help",
            "version",
        ],
        long_values: &["total"],
        forbidden: &[("--files0-from", "reads file names from a file")],
        ..NONE
    },
    Spec {
        name: "ls",
        flags: "aAbBcCdDfFgGhHiklmnNopqQrRsStuUvxXZ1",
        values: "ITw",
        long_flags: &[
            "all",
            "almost-all",
            "author",
            "escape",
            "directory",
            "dired",
            "file-type",
            "full-time",
            "group-directories-first",
            "no-group",
            "human-readable",
            "si",
            "dereference-command-line",
            "dereference-command-line-symlink-to-dir",
            "inode",
            "kibibytes",
            "literal",
            "numeric-uid-gid",
            "hide-control-chars",
            "show-control-chars",
            "quote-name",
            "reverse",
            "recursive",
            "size",
            "context",
            "zero",
            "ignore-backups",
            "help",
            "version",
        ],
        long_values: &[
            "block-size",
            "format",
            "hide",
            "ignore",
            "indicator-style",
            "quoting-style",
            "sort",
            "time",
            "time-style",
            "tabsize",
            "width",
        ],
        long_optional: &["color", "classify", "hyperlink"],
        forbidden: &[
            ("-L", "follows symbolic links, also out of the workspace"),
            (
                "--dereference",
                "follows symbolic links, also out of the workspace",
            ),
        ],
        ..NONE
    },
    Spec {
        name: "pwd",
        flags: "LP",
        long_flags: &["logical", "physical", "help", "version"],
        operands: Operands::Nothing,
        ..NONE
    },
    Spec {
        name: "tree",
        flags: "adfxqNQpugshDFvtcUriASnCXJ",
        values: "LPIHT",
        long_flags: &[
            "gitignore",
            "ignore-case",
            "matchdirs",
            "metafirst",
            "prune",
            "info",
            "noreport",
            "du",
            "si",
            "inodes",
            "device",
            "dirsfirst",
            "filesfirst",
            "nolinks",
            "help",
            "version",
        ],
        long_values: &["charset", "filelimit", "timefmt", "sort"],
        forbidden: &[
            ("-l", "follows symbolic links, also out of the workspace"),
            ("-R", "writes HTML files"),
            ("-o", "writes to a file"),
            ("--fromfile", "reads the listing from a file"),
            ("--fromtabfile", "reads the listing from a file"),
            ("--infofile", "reads an info file"),
            ("--hintro", "reads a file"),
            ("--houtro", "reads a file"),
        ],
        parser: Parser::Own,
        ..NONE
    },
    Spec {
        name: "stat",
        flags: "LftZ",
        values: "c",
        long_flags: &["dereference", "file-system", "terse", "help", "version"],
        long_values: &["format", "printf", "cached"],
        ..NONE
    },
    Spec {
        name: "file",
        flags: "bcdEhikLlNnrs0",
        values: "eFP",
        path_values: "m",
        long_flags: &[
            "brief",
            "checking-printout",
            "debug",
            "no-dereference",
            "mime",
            "keep-going",
            "dereference",
            "list",
            "no-buffer",
            "no-pad",
            "raw",
            "special-files",
            "print0",
            "apple",
            "extension",
            "mime-type",
            "mime-encoding",
            "help",
            "version",
        ],
        long_values: &["exclude", "exclude-quiet", "separator", "parameter"],
        long_paths: &["magic-file"],
        forbidden: &[
            ("-C", "compiles magic into a file"),
            ("--compile", "compiles magic into a file"),
            ("-f", "reads file names from a file"),
            ("--files-from", "reads file names from a file"),
            ("-z", "looks inside compressed files with helper programs"),
            ("-Z", "looks inside compressed files with helper programs"),
            (
                "--uncompress",
                "looks inside compressed files with helper programs",
            ),
            (
                "--uncompress-noreport",
                "looks inside compressed files with helper programs",
            ),
            ("-p", "changes file access times"),
            ("--preserve-date", "changes file access times"),
            ("-S", "turns its sandbox off"),
            ("--no-sandbox", "turns its sandbox off"),
        ],
        ..NONE
    },
    Spec {
        name: "du",
        flags: "0abcDHhklmPSsx",
        values: "Bdt",
        path_values: "X",
        long_flags: &[
            "null",
            "all",
            "apparent-size",
            "bytes",
            "total",
            "dereference-args",
            "human-readable",
            "inodes",
            "count-links",
            "no-dereference",
            "separate-dirs",
            "si",
            "summarize",
            "one-file-system",
            "help",
            "version",
        ],
        long_values: &[
            "block-size",
            "max-depth",
            "threshold",
            "time-style",
            "exclude",
        ],
        long_optional: &["time"],
        long_paths: &["exclude-from"],
        forbidden: &[
            ("-L", "follows symbolic links, also out of the workspace"),
            (
                "--dereference",
                "follows symbolic links, also out of the workspace",
            ),
            ("--files0-from", "reads file names from a file"),
        ],
        ..NONE
    },
    Spec {
        name: "df",
        flags: "ahHiklPTv",
        values: "Btx",
        long_flags: &[
            "all",
            "human-readable",
            "si",
            "inodes",
            "local",
            "no-sync",
            "portability",
            "print-type",
            "total",
            "help",
            "version",
        ],
        long_values: &["block-size", "type", "exclude-type"],
        long_optional: &["output"],
        forbidden: &[("--sync", "flushes the disks first")],
        ..NONE
    },
    Spec {
        name: "realpath",
        flags: "emLPqsz",
        long_flags: &[
            "canonicalize-existing",
            "canonicalize-missing",
            "logical",
            "physical",
            "quiet",
            "strip",
            "no-symlinks",
            "zero",
            "help",
            "version",
        ],
        long_paths: &["relative-to", "relative-base"],
        ..NONE
    },
    Spec {
        name: "readlink",
        flags: "femnqsvz",
        long_flags: &[
            "canonicalize",
            "canonicalize-existing",
            "canonicalize-missing",
            "no-newline",
            "quiet",
            "silent",
            "verbose",
            "zero",
            "help",
            "version",
        ],
        ..NONE
    },
    Spec {
        name: "od",
        flags: "vabcdfilosxDeFHILOX",
        values: "AjNSt",
        optional: "w",
        long_flags: &["output-duplicates", "traditional", "help", "version"],
        long_values: &[
            "address-radix",
            "endian",
            "skip-bytes",
            "read-bytes",
            "format",
        ],
        long_optional: &["strings", "width"],
        ..NONE
    },
    Spec {
        name: "hexdump",
        flags: "bcCdoxv",
        values: "ens",
        path_values: "f",
        optional: "L",
        long_flags: &[
            "one-byte-octal",
            "one-byte-char",
            "one-byte-hex",
            "canonical",
            "two-bytes-decimal",
            "two-bytes-octal",
            "two-bytes-hex",
            "no-squeezing",
            "help",
            "version",
        ],
        long_values: &["format", "length", "skip"],
        long_optional: &["color"],
        long_paths: &["format-file"],
        ..NONE
    },
    SUMS,
    Spec {
        name: "sha1sum",
        ..SUMS
    },
    Spec {
        name: "sha224sum",
        ..SUMS
    },
    Spec {
        name: "sha256sum",
        ..SUMS
    },
    Spec {
        name: "sha384sum",
        ..SUMS
    },
    Spec {
        name: "sha512sum",
        ..SUMS
    },
    Spec {
        name: "b2sum",
        ..SUMS
    },
];

#[cfg(test)]
mod tests {
    use super::super::programs::specs;

    #[test]
    fn the_table_is_consistent() {
        for spec in specs() {
            assert!(!spec.name.is_empty());
            assert_eq!(
                specs().filter(|s| s.name == spec.name).count(),
                1,
                "{} listed twice",
                spec.name
            );
            for c in spec.flags.chars() {
                assert!(
                    !spec.values.contains(c) && !spec.path_values.contains(c),
                    "{} -{c} is both a flag and takes a value",
                    spec.name
                );
                let forbidden = format!("-{c}");
                assert!(
                    !spec.forbidden.iter().any(|(o, _)| *o == forbidden),
                    "{} -{c} is allowed and forbidden",
                    spec.name
                );
            }
            for long in spec
                .long_flags
                .iter()
                .chain(spec.long_values)
                .chain(spec.long_optional)
                .chain(spec.long_paths)
            {
                let forbidden = format!("--{long}");
                assert!(
                    !spec.forbidden.iter().any(|(o, _)| *o == forbidden),
                    "{} --{long} is allowed and forbidden",
                    spec.name
                );
            }
        }
    }
}
