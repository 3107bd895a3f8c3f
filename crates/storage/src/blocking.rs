//! Where a page read or write may block its thread: the section is handed to a hook the
//! server installs, so that an async runtime's worker thread that faults a page in lets the
//! runtime move its other tasks elsewhere first (tokio's `block_in_place`) instead of
//! stalling them behind the disk.
//!
//! Storage knows nothing of async runtimes: without a hook (tests, the crash simulator,
//! tools) a section just runs. The hook is process-wide and set once.
//!
//! Where it sits: called by [`crate::page_file`] around every write of a block, and every
//! read the OS cannot answer from memory at once (`quill_io::File::read_cached`).

use std::sync::OnceLock;

/// Runs the section it is given, letting the thread's runtime know it may block.
pub type Hook = fn(&mut dyn FnMut());

static HOOK: OnceLock<Hook> = OnceLock::new();

/// Installs the hook every blocking section runs through from now on; a second call does
/// nothing (the first hook stays).
pub fn set_hook(hook: Hook) {
    let _ = HOOK.set(hook);
}

/// Runs `section`, through the hook when one is installed.
pub(crate) fn section<R>(section: impl FnOnce() -> R) -> R {
    let Some(hook) = HOOK.get() else { return section() };
    let mut section = Some(section);
    let mut result = None;
    hook(&mut || result = section.take().map(|s| s()));
    result.expect("a blocking hook runs the section it is given")
}
