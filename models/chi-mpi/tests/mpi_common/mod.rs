//! What the MPI test files share: the chi under test and how to start it under `mpirun`.

use std::process::{Command, Output};

/// The program under test: `chi-mpi` (chi with MPI), which is also the one-process reference.
pub const CHI: &str = env!("CARGO_BIN_EXE_chi-mpi");

/// Whether `mpirun` is installed; says so when it is not (the caller then skips).
pub fn mpirun_present() -> bool {
    let ok = Command::new("mpirun").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: mpirun not found (scripts/install-mpi.sh installs Open MPI)");
    }
    ok
}

/// `mpirun -n N chi-mpi` (arguments to add).
pub fn mpirun(n: usize) -> Command {
    let mut c = Command::new("mpirun");
    // Open MPI refuses root without these (CI containers run as root).
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c.args(["-n", &n.to_string(), "--oversubscribe", CHI]);
    c
}

/// Runs `c` and checks that it succeeded, showing both outputs if not.
pub fn run(mut c: Command) -> Output {
    let o = c.output().expect("start");
    assert!(o.status.success(), "{c:?} failed:\n{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    o
}
