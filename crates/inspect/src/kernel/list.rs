//! Walking a kernel `struct list_head` ring from its head, bounded: a
//! corrupt list (a cycle that misses the head, a pointer into unmapped
//! memory) ends the walk with a reason instead of a hang.

use kmem::Memory;
use rustc_hash::FxHashSet;

/// The nodes of a list and, when the walk stopped early, why.
pub struct Walk {
    /// Addresses of the `list_head`s after the head, in order.
    pub nodes: Vec<u64>,
    /// Why the walk stopped before coming back to the head (None: it did).
    pub stopped: Option<String>,
}

/// Follows `next` pointers from `head` until it comes back to `head`.
///
/// Invariant: every node is visited once; a node seen before (a cycle not
/// through the head), an unreadable `next`, a NULL or more than `max`
/// nodes stop the walk, with the nodes read so far kept.
pub fn walk(mem: &dyn Memory, head: u64, max: usize) -> Walk {
    let mut nodes = Vec::new();
    let mut seen = FxHashSet::default();
    let mut at = head;
    let stopped = loop {
        let next = match mem.read_u64(at) {
            Ok(n) => n,
            Err(e) => break Some(format!("list_head at {at:#x}: next does not read: {e}")),
        };
        if next == head {
            break None;
        }
        if next == 0 {
            break Some(format!("list_head at {at:#x}: next is NULL"));
        }
        if !seen.insert(next) {
            break Some(format!(
                "list_head at {at:#x}: next {next:#x} was seen before (a cycle that misses the head {head:#x})"
            ));
        }
        if nodes.len() >= max {
            break Some(format!("more than {max} entries: not following further"));
        }
        nodes.push(next);
        at = next;
    };
    Walk { nodes, stopped }
}
