//! Keeping this process's own secrets from the commands it starts.

/// Make this process non-dumpable: its `/proc` files (`environ`, `mem`, `fd`…) then belong
/// to root and are closed to processes of the same user, and it leaves no core dump. An
/// application that holds secrets in its environment or memory (API keys, tokens) and
/// starts sandboxed commands calls this once at start: the commands' programs have no
/// capabilities ([`crate::Sandbox::apply`]), so not even a process running as root can then
/// read them. Returns whether it worked.
pub fn hide_this_process() -> bool {
    #[cfg(target_os = "linux")]
    {
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
            .is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}
