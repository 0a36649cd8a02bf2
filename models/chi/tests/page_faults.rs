//! No page faults in the steady state, with the allocator and settings of chi's programs:
//! mimalloc with purging off (`chi_cli::allocator`), glibc's thresholds raised for C libraries,
//! and the autodiff pool's large-buffer list on, as `chi_cli::cli::main` sets them. After
//! warm-up an LSTM/GRU training step takes no minor page faults and the resident set stays flat
//! (the same check as the library's `autodiff/tests/page_faults.rs`). Linux only, otherwise the
//! test says it is skipped.

#[global_allocator]
static GLOBAL: chi_cli::allocator::MiMalloc = chi_cli::allocator::MiMalloc;

include!("../../../autodiff/tests/common/page_faults.rs");

#[test]
fn with_the_programs_allocator_lstm_and_gru_steps_take_no_page_faults_after_warm_up() {
    if faults_and_resident().is_none() {
        eprintln!("skipped: needs Linux (/proc/self/stat)");
        return;
    }
    chi_cli::allocator::keep_freed_memory();
    chi_autodiff::malloc::keep_freed_memory();
    chi_autodiff::pool::cache_large_buffers(true);
    lstm_and_gru_steps_take_no_page_faults_after_warm_up();
}
