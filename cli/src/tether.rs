//! The program dies with the command. If `sets3lock` itself is killed (`kill -9`, the OOM
//! killer), nobody renews the lock any more; a program left running would outlive it, and a
//! waiter would start a second copy after the lease.
//!
//! On Linux the child asks the kernel for SIGKILL when its parent dies (`PR_SET_PDEATHSIG`),
//! between fork and exec. "Parent" is the thread that forked: the command spawns from the thread
//! that runs it (the main thread of `sets3lock`; the calling thread when the Python package
//! runs the command in-process), which stays blocked in the command until the program ends. A
//! parent that died before the request was made never sends it, so the child checks that its
//! parent is still the command, and does not start otherwise. SIGKILL, not SIGTERM: with the
//! command gone, nobody could follow a SIGTERM up, and the lease still runs.
//!
//! The program's own children are not covered (the kernel clears the request at fork): a
//! program that starts others should stop them when it gets SIGTERM, and a shell should `exec`
//! its last command. Elsewhere the program outlives a killed command (GUIDE.md says so): macOS
//! has no such request, and FreeBSD's (`procctl(PROC_PDEATHSIG_CTL)`) and Android's are not used
//! yet.

// The one exception to the crate's `deny(unsafe_code)`: code that runs in the child between
// fork and exec can only be given to the standard library through the unsafe `pre_exec`.
#![allow(unsafe_code)]

/// Binds `command`'s child to this process's life, where the platform can.
#[cfg(target_os = "linux")]
pub(crate) fn to_this_process(command: &mut tokio::process::Command) {
    use nix::sys::signal::Signal;
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // functions may be called. It calls prctl(2) and getppid(2), both async-signal-safe system
    // calls; it neither allocates (its error is made from a raw OS error code) nor takes a lock,
    // and it touches nothing but its own copy of `parent`.
    unsafe {
        command.pre_exec(move || {
            let refused =
                |errno: nix::errno::Errno| std::io::Error::from_raw_os_error(errno as i32);
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(refused)?;
            if nix::unistd::getppid() != parent {
                // The command died before the request: it will never be honoured.
                return Err(std::io::Error::from_raw_os_error(nix::libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Elsewhere nothing is asked for: the program outlives a killed command.
#[cfg(not(target_os = "linux"))]
pub(crate) fn to_this_process(_: &mut tokio::process::Command) {}
