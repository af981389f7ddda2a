//! Keeping a long campaign's resident memory what its processes hold: a seed parse takes tens
//! of megabytes for a moment, and glibc's allocator would otherwise keep those pages.

use std::sync::atomic::{AtomicU64, Ordering};

/// Resident bytes the trims of this process handed back, for its report.
static RETURNED: AtomicU64 = AtomicU64::new(0);

/// glibc serves an allocation of 128 KiB or more by its own mapping, returned to the kernel when
/// freed, but after such a free it raises that threshold to the freed size: a seed parse's large
/// buffers then come from the heap, and the long-lived allocations made between them keep its
/// pages resident (a client's RSS was twice its heap in use after 20 minutes). A fixed
/// threshold keeps them out. Set before the launcher parses directory seeds, since the clients
/// it forks inherit its heap.
pub fn keep_large_allocations_out_of_the_heap() {
    // SAFETY: mallopt only sets glibc's allocator parameters.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
}

/// glibc keeps small freed blocks that overflow its per-thread cache in "fast bins", unmerged,
/// and merges them all whenever a large block is asked for. A seed parse frees millions of
/// small nodes as lang-c backtracks while its tables grow: merging was a quarter of it. Without
/// fast bins a block is merged as it is freed, and a csmith seed parses in 33 ms instead of
/// 39 ms.
pub fn merge_freed_blocks_at_once() {
    // SAFETY: mallopt only sets glibc's allocator parameters.
    unsafe {
        libc::mallopt(libc::M_MXFAST, 0);
    }
}

/// Hands the pages glibc freed back to the kernel: without this a process's resident memory is
/// the largest parse it ever did rather than what it holds. Also called every few seconds: the
/// free chunks of the heap move as proposals come and go, and each page they touch stays
/// resident (a client's anonymous memory crept up by about 1 MB an hour while its heap in use
/// stayed flat). Returns the resident bytes handed back.
pub fn return_freed_memory() -> u64 {
    let resident = || super::usage::statm_bytes("self", 1).unwrap_or(0);
    let before = resident();
    // SAFETY: malloc_trim only hands glibc's free pages back to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
    let returned = before.saturating_sub(resident());
    RETURNED.fetch_add(returned, Ordering::Relaxed);
    returned
}

/// The resident bytes every trim of this process has handed back so far.
pub fn returned_so_far() -> u64 {
    RETURNED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_freed_blocks_are_not_kept_apart_in_fast_bins() {
        merge_freed_blocks_at_once();
        // SAFETY: mallinfo2 only reads the allocator's statistics.
        let in_fast_bins = || unsafe { libc::mallinfo2() }.fsmblks;
        let before = in_fast_bins();
        // More than the per-thread cache holds of one size.
        let blocks: Vec<Box<[u8; 40]>> = (0..1000).map(|i| Box::new([i as u8; 40])).collect();
        drop(blocks);
        assert!(
            in_fast_bins() <= before,
            "{} bytes went to fast bins",
            in_fast_bins() - before
        );
    }

    #[test]
    fn freed_pages_inside_the_heap_go_back_to_the_kernel() {
        keep_large_allocations_out_of_the_heap();
        // Blocks below the mapping threshold come from the heap; the last one, kept, stops
        // glibc from simply lowering the heap's top, so only a trim can return the others.
        let mut blocks: Vec<Vec<u8>> = (0..1024).map(|i| vec![i as u8 | 1; 64 << 10]).collect();
        let keep = blocks.pop();
        let total_before = returned_so_far();
        drop(blocks);
        let returned = return_freed_memory();
        assert!(
            returned >= 32 << 20,
            "only {returned} of 64 MiB freed went back to the kernel"
        );
        assert!(returned_so_far() >= total_before + returned);
        drop(keep);
    }
}
