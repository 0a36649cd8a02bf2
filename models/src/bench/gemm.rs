//! `chi bench gemm`: chi's GEMM side by side with `matrixmultiply`.

use clap::Args;

/// Options of `chi bench gemm`.
#[derive(Args, Debug, Clone)]
pub struct GemmBenchArgs {
    /// Square sizes to run.
    #[arg(long, value_delimiter = ',', default_value = "64,128,256,512,1024")]
    pub sizes: Vec<usize>,
    /// Element type: f32 or f64.
    #[arg(long, default_value = "f32")]
    pub dtype: String,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl GemmBenchArgs {
    /// The arguments used when `chi` runs this benchmark as its default job.
    pub fn default_job() -> Self {
        GemmBenchArgs { sizes: vec![64, 128, 256, 512, 1024], dtype: "f32".into(), json: false }
    }
}

/// Runs the benchmark and prints its report.
pub fn run(args: &GemmBenchArgs) -> Result<(), String> {
    let _ = args;
    Err("chi bench gemm is not built yet".into())
}
