//! `chi train` as one of several processes (`mpirun -n K chi-mpi train …`).
//!
//! Rank 0 is the run: it resolves the configuration, owns the run directory (lock, logs,
//! evaluation, checkpoints, plots, `model.safetensors`) and tells the other ranks what to do —
//! the configuration as TOML and, when resuming, the checkpoint's bytes — so they need the data
//! but not the run directory (which may be on another machine). Every rank draws the same global
//! batch of `K × batch_size` examples and trains on its shard; the trainer averages the
//! gradients ([`chi_nn::dist`]). Dropout masks come from a stream per rank and step, derived from
//! the seed, so a resumed run repeats them exactly whatever K was before.
//!
//! Resuming with another K continues from the saved position in the epoch with the new global
//! batch: a different (equally valid) sequence of batches than an uninterrupted run.

use super::{registry, Config, Run, Setup, TrainOptions, TrainSummary};
use chi_autodiff::{Rng, Tensor};
use chi_nn::dist::{shard, Collective, DataParallel, Mode};
use chi_nn::trainer::{StepOutput, Trainer, TrainerState};
use serde_json::{json, Value};
use std::rc::Rc;

/// The settings of the gradient exchange from `opts`.
pub(super) fn data_parallel(comm: Rc<dyn Collective>, opts: &TrainOptions) -> Result<DataParallel, String> {
    let mut dp = DataParallel::new(comm).overlap(!opts.no_overlap);
    if let Some(b) = opts.bucket_bytes {
        if b == 0 {
            return Err("--bucket-kib must be at least 1".into());
        }
        dp = dp.bucket_bytes(b);
    }
    if let Some(h) = opts.local_sgd {
        if h == 0 {
            return Err("--local-sgd must be at least 1 step".into());
        }
        dp = dp.mode(Mode::LocalSgd { every: h });
    }
    Ok(dp)
}

/// Rank 0: writes `dist.json` (ranks, steps, seconds of training, seconds blocked in
/// communication and their share) and prints the share.
pub(super) fn report(out: &std::path::Path, dp: &DataParallel, secs: f64, steps: u64, opts: &TrainOptions) -> Result<(), String> {
    let (k, waited) = (dp.comm().size(), dp.waited_secs());
    let share = if secs > 0.0 { waited / secs } else { 0.0 };
    let doc = json!({
        "ranks": k,
        "steps": steps,
        "train_secs": secs,
        "comm_wait_secs": waited,
        "comm_share": share,
        "ms_per_step": if steps > 0 { 1e3 * secs / steps as f64 } else { 0.0 },
        "mode": match opts.local_sgd { Some(h) => format!("local-sgd every {h}"), None => "sync".into() },
        "overlap": !opts.no_overlap,
    });
    chi_nn::checkpoint::atomic_write(&out.join("dist.json"), serde_json::to_string_pretty(&doc).unwrap().as_bytes())?;
    eprintln!("{k} ranks: {steps} steps in {secs:.2} s, {waited:.2} s ({:.1} %) of it blocked in communication on rank 0", 100.0 * share);
    Ok(())
}

/// This rank's examples of a global batch (`None` when it has none); all of it in one process.
pub(super) fn my_shard<'a>(comm: Option<&dyn Collective>, global: &'a [usize]) -> Option<&'a [usize]> {
    let mine = match comm {
        Some(c) => shard(global, c.rank(), c.size()),
        None => global,
    };
    (!mine.is_empty()).then_some(mine)
}

/// The step of a rank whose shard is empty: no loss to differentiate, weight 0.
pub(super) fn empty_step() -> StepOutput<f32> {
    StepOutput::new(Tensor::scalar(0.0)).weight(0.0)
}

/// Several processes: rank r's dropout stream for step `step` (0-based), a function of the seed,
/// the rank and the step only. `None` in one process (the run's own dropout stream is used).
pub(super) fn dropout_stream(comm: Option<&dyn Collective>, seed: u64, step: u64) -> Option<Rng> {
    let c = comm?;
    // Mixed, so nearby steps and ranks get unrelated streams.
    Some(Rng::new(Rng::mix(seed ^ (c.rank() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ step.wrapping_mul(0xD1B5_4A32_D192_ED03))))
}

fn send(comm: &dyn Collective, v: &Value) {
    let mut b = v.to_string().into_bytes();
    comm.broadcast_bytes(&mut b, 0);
}

fn receive(comm: &dyn Collective) -> Result<Value, String> {
    let mut b = Vec::new();
    comm.broadcast_bytes(&mut b, 0);
    serde_json::from_slice(&b).map_err(|e| format!("rank {}: bad message from rank 0: {e}", comm.rank()))
}

/// What a stop message means for a follower: `Ok` when rank 0 has nothing to do, `Err` when it
/// failed.
fn stopped(v: &Value) -> Result<(), String> {
    let m = v["message"].as_str().unwrap_or("");
    if v["error"].as_bool() == Some(true) {
        Err(format!("rank 0 stopped: {m}"))
    } else {
        Ok(())
    }
}

/// Rank 0 in `chi train`, before [`super::train`]: tells the others whether to go on (`Ok(true)`)
/// or stop, with the error or the reason.
pub(crate) fn announce(comm: &dyn Collective, decision: &Result<bool, String>) {
    match decision {
        Ok(true) => send(comm, &json!({ "kind": "go" })),
        Ok(false) => send(comm, &json!({ "kind": "stop", "error": false, "message": "nothing to do" })),
        Err(e) => send(comm, &json!({ "kind": "stop", "error": true, "message": e })),
    }
}

/// A rank other than 0 in `chi train`: waits for rank 0's decision; `Ok(false)` when there is
/// nothing to do.
pub(crate) fn follow_announcement(comm: &dyn Collective) -> Result<bool, String> {
    let v = receive(comm)?;
    match v["kind"].as_str() {
        Some("go") => Ok(true),
        _ => stopped(&v).map(|_| false),
    }
}

/// Rank 0 in [`super::train`], after setting up: sends the configuration and the checkpoint it
/// resumed from, or the reason to stop.
pub(super) fn lead(comm: &dyn Collective, setup: Result<&Setup, &str>) -> Result<(), String> {
    match setup {
        Err(e) => send(comm, &json!({ "kind": "stop", "error": true, "message": e })),
        Ok(Setup::Finished(_)) => send(comm, &json!({ "kind": "stop", "error": false, "message": "the run has finished" })),
        Ok(Setup::Ready { run, checkpoint, .. }) => {
            send(comm, &json!({ "kind": "ready", "config": run.cfg.to_toml(), "ranks": comm.size() }));
            let mut bytes = match checkpoint {
                Some(p) => chi_nn::limits::read_file(p).map_err(|e| format!("{}: {e}", p.display()))?,
                None => Vec::new(),
            };
            comm.broadcast_bytes(&mut bytes, 0);
        }
    }
    Ok(())
}

/// A rank other than 0 in [`super::train`]: builds the run rank 0 describes and trains its shards.
/// Writes no files; returns the steps done (its `test` metrics are empty: rank 0 evaluates).
pub(super) fn worker(opts: &TrainOptions, comm: Rc<dyn Collective>) -> Result<TrainSummary, String> {
    let v = receive(&*comm)?;
    let empty = |step| TrainSummary { step, losses: Vec::new(), test: Default::default(), checkpoint: Default::default() };
    if v["kind"].as_str() != Some("ready") {
        return stopped(&v).map(|_| empty(0));
    }
    let cfg = Config::from_toml(v["config"].as_str().unwrap_or(""))?;
    let mut run = Run::with_ranks(&cfg, comm.size())?;
    let mut bytes = Vec::new();
    comm.broadcast_bytes(&mut bytes, 0);
    if !bytes.is_empty() {
        let tmp = std::env::temp_dir().join(format!("chi-rank{}-{}.ckpt.safetensors", comm.rank(), std::process::id()));
        std::fs::write(&tmp, &bytes).map_err(|e| format!("{}: {e}", tmp.display()))?;
        let loaded = run.load(&tmp);
        let _ = std::fs::remove_file(&tmp);
        loaded?;
    }
    let start = run.step;
    let end = opts.stop_after.map_or(cfg.steps, |s| s.min(cfg.steps)).max(start);
    let Run { dataset, model, optim, batcher, .. } = &mut run;
    let (model, dataset) = (&**model, &*dataset);
    let c = comm.clone();
    let fit = Trainer::new(model.store(), optim)
        .steps(cfg.steps)
        .stop_at(end)
        .clip_norm_opt(cfg.clip_norm)
        .schedule(cfg.schedule.clone())
        .block(cfg.block.clone())
        .data_parallel(data_parallel(comm, opts)?)
        .resume(TrainerState { step: start })
        .fit((start..).map(|s| (s, batcher.next_batch())), |(s, global)| {
            let Some(idx) = my_shard(Some(&*c), &global) else { return empty_step() };
            let mut drop = dropout_stream(Some(&*c), cfg.seed, s).expect("several ranks");
            let fo = model.forward(&dataset.train, idx, true, &mut drop);
            StepOutput::new(registry::task_loss(dataset.task, &fo.output, &dataset.train, idx)).weight(idx.len() as f64)
        })
        .map_err(|e| e.to_string())?;
    Ok(empty(fit.state.step))
}
