//! What the running kernel can enforce: [`Support`].

use std::sync::OnceLock;

/// What the running kernel can enforce: Landlock (and which ABI) and seccomp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    landlock_abi: Option<u8>,
    seccomp: bool,
}

impl Support {
    /// The running kernel's support, probed once per process.
    pub fn current() -> Support {
        static PROBED: OnceLock<Support> = OnceLock::new();
        *PROBED.get_or_init(|| {
            let support = Support {
                landlock_abi: crate::sys::landlock_abi(),
                seccomp: crate::sys::seccomp_available(),
            };
            tracing::debug!(?support, "kernel sandbox support");
            support
        })
    }

    /// A fixed answer (tests, or an application that must not sandbox): `landlock_abi`
    /// `None` means no Landlock.
    pub fn fixed(landlock_abi: Option<u8>, seccomp: bool) -> Support {
        Support {
            landlock_abi: landlock_abi.filter(|abi| *abi >= 1),
            seccomp,
        }
    }

    /// The Landlock ABI version, when the kernel has Landlock enabled.
    pub fn landlock_abi(&self) -> Option<u8> {
        self.landlock_abi
    }

    /// Whether seccomp filters can be installed.
    pub fn seccomp(&self) -> bool {
        self.seccomp
    }

    /// Whether a `read-only` or `workspace-write` policy can be enforced (Landlock is
    /// there). Without seccomp the network is still closed for TCP when the Landlock ABI
    /// is 4 or later.
    pub fn can_enforce(&self) -> bool {
        self.landlock_abi.is_some()
    }

    /// Whether a command without network can be kept off every kind of socket (seccomp),
    /// or at least off TCP (Landlock ABI 4).
    pub fn can_close_network(&self) -> bool {
        self.seccomp || self.landlock_abi.is_some_and(|abi| abi >= 4)
    }

    /// The mechanisms in words: `"Landlock ABI 7, seccomp"`.
    pub fn describe(&self) -> String {
        match (self.landlock_abi, self.seccomp) {
            (Some(abi), true) => format!("Landlock ABI {abi}, seccomp"),
            (Some(abi), false) => format!("Landlock ABI {abi}, no seccomp"),
            (None, true) => "no Landlock, seccomp".to_string(),
            (None, false) => "no Landlock, no seccomp".to_string(),
        }
    }

    /// Why a policy cannot be enforced, in words (empty when it can).
    pub fn reason(&self) -> String {
        if self.can_enforce() {
            String::new()
        } else if cfg!(target_os = "linux") {
            "this kernel has no Landlock (Linux 5.13 or later with Landlock enabled is needed)"
                .to_string()
        } else {
            "sandboxing needs Linux's Landlock".to_string()
        }
    }
}
