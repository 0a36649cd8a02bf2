//! No page faults in the steady state, for the library under glibc's malloc. A recurrent
//! training step allocates and frees the same large buffers (projected inputs, gate activations,
//! gradients, packed weights) every iteration; if the allocator returned them to the system,
//! every step would map and clear them again in the kernel's page-fault path (11 % of an LSTM
//! step in an earlier profile). With [`chi_autodiff::malloc::keep_freed_memory`], after warm-up a
//! step takes no minor page faults at all, and the resident set stays flat. The large-buffer
//! list (`chi_autodiff::pool::cache_large_buffers`) stays off, its default: under glibc it makes
//! the heap grow again after warm-up (see its documentation). Counted by the kernel
//! (`/proc/self/stat`, `/proc/self/statm`); Linux with glibc only, otherwise the test says it is
//! skipped. The programs' configuration (mimalloc, the list on) is checked by
//! `models/chi/tests/page_faults.rs`.

include!("common/page_faults.rs");

#[test]
fn lstm_and_gru_training_steps_take_no_page_faults_after_warm_up() {
    if !chi_autodiff::malloc::keep_freed_memory() || faults_and_resident().is_none() {
        eprintln!("skipped: needs Linux with glibc (keep_freed_memory and /proc/self/stat)");
        return;
    }
    lstm_and_gru_steps_take_no_page_faults_after_warm_up();
}
