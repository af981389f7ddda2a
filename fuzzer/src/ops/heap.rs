//! Keeping a long campaign's resident memory what its processes hold: a seed parse takes tens
//! of megabytes for a moment, and glibc's allocator would otherwise keep those pages.

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

/// Hands the pages glibc freed back to the kernel: without this a process's resident memory is
/// the largest parse it ever did rather than what it holds.
pub fn return_freed_memory() {
    // SAFETY: malloc_trim only hands glibc's free pages back to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}
