//! Checkpoints in the [safetensors](https://github.com/huggingface/safetensors) format.
//!
//! * **Weights** ([`save_params`] / [`load_params`]): one tensor per parameter, named by the
//!   parameter's dotted name, dtype `F32`/`F64`, with its shape. Opens in PyTorch with
//!   `safetensors.torch.load_file(path)`.
//! * **Full checkpoints** ([`save_checkpoint`] / [`load_checkpoint`]): the weights, plus the
//!   optimiser's buffers as tensors named `__optim__.<slot>.<param>`, plus in the header's
//!   `__metadata__`: the step, the RNG states, the run config (JSON), the optimiser settings and
//!   per-parameter step counts, and any extra strings. Everything needed to resume a run
//!   bit-identically.
//!
//! Every file carries `chi.checksum`, a 64-bit FNV-1a hash over the tensors' names, dtypes,
//! shapes and bytes, so flipped bytes in the data are caught too.
//!
//! Writes are atomic ([`atomic_write`]: temporary file in the same directory, fsync, rename,
//! fsync of the directory), so a crash leaves either the old file or the new one. Loads
//! validate everything (format, checksum, every name, dtype and shape, the optimiser state)
//! before assigning any value: an error leaves the model and optimiser untouched, and its
//! message names the file and the problem.

use crate::error::NnError;
use crate::optim::{OptimConfig, OptimState, Optimizer, ParamState};
use crate::params::Param;
use chi_autodiff::Float;
use safetensors::tensor::{Dtype, SafeTensors};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Prefix of optimiser-state tensor names in full checkpoints.
pub const OPTIM_PREFIX: &str = "__optim__.";
/// The largest step a checkpoint may record (2^53: every step count below it is exact as a
/// float, which the schedules and Adam's bias correction compute with).
pub const MAX_STEP: u64 = 1 << 53;
const FORMAT_KEY: &str = "chi.format";
const CHECKSUM_KEY: &str = "chi.checksum";

/// Whether two paths name the same existing file (or directory), links and `..` resolved.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory is written,
/// fsynced and renamed over `path`; then the directory is fsynced.
///
/// A symbolic link is followed (the file it names is replaced, the link stays). A path that
/// names something other than a regular file (a terminal, a pipe, `/dev/null`) is written
/// directly, as a shell redirection would: replacing it would turn it into a plain file.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), NnError> {
    let resolved;
    let path = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(path) {
            Ok(target) => {
                resolved = target;
                resolved.as_path()
            }
            // A dangling link: the file it names does not exist yet; write it there.
            Err(_) => match std::fs::read_link(path) {
                Ok(t) => {
                    resolved = if t.is_absolute() { t } else { path.parent().unwrap_or(Path::new(".")).join(t) };
                    resolved.as_path()
                }
                Err(e) => return Err(NnError::Io { path: path.to_path_buf(), action: "cannot read the link", source: e }),
            },
        },
        _ => path,
    };
    if let Ok(m) = std::fs::metadata(path) {
        if m.is_dir() {
            return Err(NnError::format(path, "is a directory; name a file"));
        }
        if !m.is_file() {
            return std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|mut f| f.write_all(bytes))
                .map_err(|e| NnError::Io { path: path.to_path_buf(), action: "write failed", source: e });
        }
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| NnError::Io { path: dir.clone(), action: "cannot create directory", source: e })?;
    let fname = path.file_name().ok_or_else(|| NnError::format(path, "not a file path"))?;
    let tmp = dir.join(format!(".{}.tmp-{}", fname.to_string_lossy(), std::process::id()));
    let res = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if let Err(e) = res {
        let _ = std::fs::remove_file(&tmp);
        return Err(NnError::Io { path: path.to_path_buf(), action: "write failed", source: e });
    }
    Ok(())
}

fn dtype_of<T: Float>() -> Dtype {
    if T::NAME == "f64" {
        Dtype::F64
    } else {
        Dtype::F32
    }
}

fn to_bytes<T: Float>(v: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * 8);
    for x in v {
        if T::NAME == "f64" {
            out.extend_from_slice(&x.to_f64().to_le_bytes());
        } else {
            out.extend_from_slice(&(x.to_f64() as f32).to_le_bytes());
        }
    }
    out
}

fn from_bytes<T: Float>(b: &[u8]) -> Vec<T> {
    if T::NAME == "f64" {
        b.chunks_exact(8).map(|c| T::from_f64(f64::from_le_bytes(c.try_into().unwrap()))).collect()
    } else {
        b.chunks_exact(4).map(|c| T::from_f64(f32::from_le_bytes(c.try_into().unwrap()) as f64)).collect()
    }
}

/// The FNV-1a 64-bit offset basis: the starting value of a hash built with [`fnv`].
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// 64-bit FNV-1a: folds `bytes` into the running hash `h` (start from [`FNV_OFFSET`]). Used for
/// the checksums of checkpoints and of `chi reproduce`'s unit records.
pub fn fnv(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h ^= b as u64;
        *h = h.wrapping_mul(0x100_0000_01b3);
    }
}

/// Checksum over the metadata (except the checksum itself) and (name, dtype, shape, bytes) of
/// the tensors, in name order.
fn checksum<'a>(meta: &HashMap<String, String>, tensors: impl Iterator<Item = (&'a str, String, &'a [usize], &'a [u8])>) -> u64 {
    let mut items: Vec<_> = tensors.collect();
    items.sort_by(|a, b| a.0.cmp(b.0));
    let mut h = FNV_OFFSET;
    let mut m: Vec<_> = meta.iter().filter(|(k, _)| k.as_str() != CHECKSUM_KEY).collect();
    m.sort();
    for (k, v) in m {
        fnv(&mut h, k.as_bytes());
        fnv(&mut h, &[0]);
        fnv(&mut h, v.as_bytes());
        fnv(&mut h, &[0]);
    }
    for (name, dt, shape, bytes) in items {
        fnv(&mut h, name.as_bytes());
        fnv(&mut h, &[0]);
        fnv(&mut h, dt.as_bytes());
        for s in shape {
            fnv(&mut h, &(*s as u64).to_le_bytes());
        }
        fnv(&mut h, bytes);
    }
    h
}

/// Serialises named tensors and metadata to safetensors bytes (adding the checksum).
///
/// The bytes depend only on the tensors and the metadata: the header's JSON lists the metadata
/// keys and the tensors in sorted order (the `safetensors` crate's own writer takes the metadata
/// from a `HashMap`, whose order changes from run to run), so the same seed and configuration
/// give byte-identical files.
fn serialize<T: Float>(tensors: &[(String, Vec<usize>, Vec<T>)], mut meta: HashMap<String, String>) -> Result<Vec<u8>, String> {
    let bytes: Vec<Vec<u8>> = tensors.iter().map(|(_, _, v)| to_bytes(v)).collect();
    let dt = format!("{:?}", dtype_of::<T>());
    for ((n, s, _), b) in tensors.iter().zip(&bytes) {
        let want = s.iter().try_fold(dt_size::<T>(), |a, &d| a.checked_mul(d));
        if want != Some(b.len()) {
            return Err(format!("tensor {n:?}: shape {s:?} does not match its {} bytes", b.len()));
        }
    }
    let sum = checksum(&meta, tensors.iter().zip(&bytes).map(|((n, s, _), b)| (n.as_str(), dt.clone(), s.as_slice(), b.as_slice())));
    meta.insert(CHECKSUM_KEY.into(), format!("{sum:016x}"));
    let mut order: Vec<usize> = (0..tensors.len()).collect();
    order.sort_by(|&a, &b| tensors[a].0.cmp(&tensors[b].0));
    for w in order.windows(2) {
        if tensors[w[0]].0 == tensors[w[1]].0 {
            return Err(format!("tensor {:?} appears twice", tensors[w[0]].0));
        }
    }
    let sorted_meta: BTreeMap<&String, &String> = meta.iter().collect();
    let js = |v: &str| serde_json::to_string(v).unwrap_or_default();
    let mut header = String::from("{");
    header.push_str("\"__metadata__\":{");
    header.push_str(&sorted_meta.iter().map(|(k, v)| format!("{}:{}", js(k), js(v))).collect::<Vec<_>>().join(","));
    header.push('}');
    let mut offset = 0usize;
    for &i in &order {
        let (n, s, _) = &tensors[i];
        let len = bytes[i].len();
        let shape = s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",");
        header.push_str(&format!(",{}:{{\"dtype\":{},\"shape\":[{shape}],\"data_offsets\":[{offset},{}]}}", js(n), js(&dt), offset + len));
        offset += len;
    }
    header.push('}');
    // The data that follows the header starts 8-byte aligned, as the format recommends.
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut out = Vec::with_capacity(8 + header.len() + offset);
    out.extend_from_slice(&(header.len() as u64).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for &i in &order {
        out.extend_from_slice(&bytes[i]);
    }
    Ok(out)
}

fn dt_size<T: Float>() -> usize {
    if T::NAME == "f64" {
        8
    } else {
        4
    }
}

/// A tensor as stored in a file: name, shape and values.
pub type NamedTensor<T> = (String, Vec<usize>, Vec<T>);

/// Safetensors bytes of `tensors` and `metadata`, sealed with chi's checksum, exactly as
/// [`save_params`] and [`save_checkpoint`] write them. For tools and fuzz targets that build or
/// edit files (with [`unpack`]): a file made this way passes the checksum, so loading it tests
/// everything behind it.
pub fn pack<T: Float>(tensors: &[NamedTensor<T>], metadata: &BTreeMap<String, String>) -> Result<Vec<u8>, NnError> {
    let meta: HashMap<String, String> = metadata.iter().filter(|(k, _)| k.as_str() != CHECKSUM_KEY).map(|(k, v)| (k.clone(), v.clone())).collect();
    serialize(tensors, meta).map_err(|e| NnError::format("<packed>", e))
}

/// The metadata (without the checksum) and the tensors of a chi file whose checksum is valid,
/// the inverse of [`pack`]. Tensors of another dtype than `T` are an error. `name` labels
/// errors.
pub fn unpack<T: Float>(name: &Path, bytes: &[u8]) -> Result<(BTreeMap<String, String>, Vec<NamedTensor<T>>), NnError> {
    let parsed = parse_bytes(name, bytes)?;
    let mut tensors = Vec::with_capacity(parsed.tensors.len());
    for (n, (dt, shape, b)) in parsed.tensors {
        if dt != dtype_of::<T>() {
            return Err(NnError::format(name, format!("tensor {n:?} has dtype {dt:?}, expected {:?}", dtype_of::<T>())));
        }
        tensors.push((n, shape, from_bytes::<T>(&b)));
    }
    let meta = parsed.meta.into_iter().filter(|(k, _)| k.as_str() != CHECKSUM_KEY).collect();
    Ok((meta, tensors))
}

/// A parsed, checked safetensors file: tensors by name and the metadata.
struct Parsed {
    tensors: BTreeMap<String, (Dtype, Vec<usize>, Vec<u8>)>,
    meta: HashMap<String, String>,
}

fn parse(path: &Path) -> Result<Parsed, NnError> {
    parse_bytes(path, &read_safetensors(path)?)
}

/// The bytes of a safetensors file, bounded as every input file ([`crate::limits::read_file`]);
/// a file that plainly is not one (its first 8 bytes, the header's length, are 0, or the header
/// does not start as JSON) is refused after its first 8 KiB, so that `/dev/zero` or a 3 GB data
/// file given as a model is not read whole first.
pub fn read_safetensors(path: &Path) -> Result<Vec<u8>, NnError> {
    const NOT: &str = "not a safetensors file (it starts with neither a header length nor a JSON header)";
    let head = |h: &[u8]| {
        let plainly_not = h.len() > 8 && (h[..8] == [0; 8] || !matches!(h[8], b'{' | b' '));
        if plainly_not {
            Err(NOT.to_string())
        } else {
            Ok(())
        }
    };
    crate::limits::read_file_checked(path, head).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData if e.raw_os_error().is_none() => NnError::format(path, e.to_string()),
        _ => NnError::Io { path: path.to_path_buf(), action: "cannot read", source: e },
    })
}

/// [`parse`] of a file's contents (`path` names it in errors).
fn parse_bytes(path: &Path, bytes: &[u8]) -> Result<Parsed, NnError> {
    let st = SafeTensors::deserialize(bytes).map_err(|e| NnError::format(path, format!("not a valid safetensors file (truncated or corrupt?): {e}")))?;
    let (_, md) = SafeTensors::read_metadata(bytes).map_err(|e| NnError::format(path, format!("corrupt header: {e}")))?;
    let meta = md.metadata().clone().unwrap_or_default();
    let mut tensors = BTreeMap::new();
    for (name, view) in st.tensors() {
        tensors.insert(name.to_string(), (view.dtype(), view.shape().to_vec(), view.data().to_vec()));
    }
    // Files written by chi must carry a checksum; foreign files (PyTorch) need not.
    if meta.contains_key(FORMAT_KEY) && !meta.contains_key(CHECKSUM_KEY) {
        return Err(NnError::format(path, format!("checksum missing from a chi file (corrupt header)")));
    }
    if let Some(want) = meta.get(CHECKSUM_KEY) {
        let got = checksum(&meta, tensors.iter().map(|(n, (d, s, b))| (n.as_str(), format!("{d:?}"), s.as_slice(), b.as_slice())));
        if format!("{got:016x}") != *want {
            return Err(NnError::format(path, format!("checksum mismatch (file corrupt): stored {want}, computed {got:016x}")));
        }
    }
    Ok(Parsed { tensors, meta })
}

/// Checks `params` against the parsed tensors and returns the new values, in order.
fn check_params<T: Float>(path: &Path, parsed: &Parsed, params: &[Param<T>], strict: bool) -> Result<Vec<Vec<T>>, NnError> {
    let mut out = Vec::with_capacity(params.len());
    for prm in params {
        let Some((dt, shape, bytes)) = parsed.tensors.get(prm.name().as_str()) else {
            return Err(NnError::format(path, format!("missing tensor {:?}", prm.name())));
        };
        if *dt != dtype_of::<T>() {
            return Err(NnError::format(path, format!("tensor {:?} has dtype {dt:?}, the model expects {:?}", prm.name(), dtype_of::<T>())));
        }
        if *shape != prm.shape() {
            return Err(NnError::TensorShape { path: path.to_path_buf(), tensor: prm.name().to_string(), found: shape.clone(), expected: prm.shape() });
        }
        let values = from_bytes::<T>(bytes);
        // A model holding NaN or infinity answers every input with NaN (or one class, confidently):
        // what a diverged run leaves, refused here rather than used.
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(NnError::format(path, format!("tensor {:?} holds {:?} at index {i}: non-finite weights (a diverged run?) cannot be used", prm.name(), values[i])));
        }
        out.push(values);
    }
    if strict {
        for name in parsed.tensors.keys() {
            if !name.starts_with(OPTIM_PREFIX) && !params.iter().any(|q| q.name() == *name) {
                return Err(NnError::format(path, format!("unexpected tensor {name:?} (not a parameter of the model)")));
            }
        }
    }
    Ok(out)
}

/// Saves the parameters' values (tensor name = parameter name) with optional string metadata.
pub fn save_params<T: Float>(path: &Path, params: &[Param<T>], metadata: &BTreeMap<String, String>) -> Result<(), NnError> {
    let tensors: Vec<_> = params.iter().map(|p| (p.name().to_string(), p.shape(), p.to_vec())).collect();
    let mut meta: HashMap<String, String> = metadata.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    meta.insert(FORMAT_KEY.into(), "weights".into());
    let bytes = serialize(&tensors, meta).map_err(|e| NnError::format(path, e))?;
    atomic_write(path, &bytes)
}

/// Loads values into `params`: every parameter must be in the file with the same dtype and
/// shape, and the file may hold no other tensor (optimiser tensors of a full checkpoint are
/// allowed). All-or-nothing. Returns the file's metadata.
pub fn load_params<T: Float>(path: &Path, params: &[Param<T>]) -> Result<BTreeMap<String, String>, NnError> {
    let bytes = read_safetensors(path)?;
    load_params_from_bytes(path, &bytes, params)
}

/// [`load_params`] from a file's contents already in memory (`name` labels errors). Used by the
/// fuzz targets; never panics on any input.
pub fn load_params_from_bytes<T: Float>(name: &Path, bytes: &[u8], params: &[Param<T>]) -> Result<BTreeMap<String, String>, NnError> {
    let path = name;
    let parsed = parse_bytes(path, bytes)?;
    let values = check_params(path, &parsed, params, true)?;
    for (p, v) in params.iter().zip(values) {
        p.set_values(v);
    }
    Ok(parsed.meta.into_iter().collect())
}

/// Everything in a full checkpoint besides the tensors.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckpointMeta {
    /// Training steps completed.
    pub step: u64,
    /// Named random-generator states (`chi_autodiff::Rng::state`).
    pub rngs: BTreeMap<String, u64>,
    /// The run configuration (JSON text).
    pub config: String,
    /// Any other strings (batcher position, best metric, ...).
    pub extra: BTreeMap<String, String>,
}

/// Saves a full checkpoint: parameters, optimiser state and `meta`, atomically.
pub fn save_checkpoint<T: Float>(path: &Path, params: &[Param<T>], optim: &Optimizer<T>, meta: &CheckpointMeta) -> Result<(), NnError> {
    let st = optim.state();
    let mut tensors: Vec<_> = params.iter().map(|p| (p.name().to_string(), p.shape(), p.to_vec())).collect();
    let mut steps = BTreeMap::new();
    for (name, ps) in &st.params {
        // What `load_checkpoint` refuses is not written: a parameter cannot have had more
        // updates than the run has had steps.
        if ps.step > meta.step {
            return Err(NnError::format(path, format!("not written: the optimiser has made {} updates of {name:?}, more than CheckpointMeta::step {} (give the number of optimiser steps taken)", ps.step, meta.step)));
        }
        let shape = params.iter().find(|p| p.name() == *name).map(|p| p.shape()).unwrap_or_else(|| vec![0]);
        for (slot, buf) in &ps.slots {
            tensors.push((format!("{OPTIM_PREFIX}{slot}.{name}"), shape.clone(), buf.clone()));
        }
        steps.insert(name.clone(), ps.step);
    }
    let mut m: HashMap<String, String> = HashMap::new();
    m.insert(FORMAT_KEY.into(), "full-checkpoint-v1".into());
    m.insert("chi.step".into(), meta.step.to_string());
    m.insert("chi.rngs".into(), serde_json::to_string(&meta.rngs).unwrap());
    m.insert("chi.config".into(), meta.config.clone());
    m.insert("chi.extra".into(), serde_json::to_string(&meta.extra).unwrap());
    m.insert("chi.optim.config".into(), serde_json::to_string(&st.config).unwrap());
    m.insert("chi.optim.lr".into(), format!("{:?}", st.lr));
    m.insert("chi.optim.steps".into(), serde_json::to_string(&steps).unwrap());
    let bytes = serialize(&tensors, m).map_err(|e| NnError::format(path, e))?;
    atomic_write(path, &bytes)
}

/// The shapes of the model tensors (not the optimiser's) of a checkpoint or weights file, by
/// name. Lets a caller compare what a file holds with what a configuration would build before
/// building it. Checks the file fully.
pub fn read_tensor_shapes(path: &Path) -> Result<BTreeMap<String, Vec<usize>>, NnError> {
    let parsed = parse(path)?;
    Ok(parsed.tensors.into_iter().filter(|(n, _)| !n.starts_with(OPTIM_PREFIX)).map(|(n, (_, s, _))| (n, s)).collect())
}

/// Reads only the metadata of a full checkpoint (to rebuild the model from its config before
/// loading). Checks the file fully.
pub fn read_checkpoint_meta(path: &Path) -> Result<CheckpointMeta, NnError> {
    parse_meta(path, &parse(path)?)
}

fn parse_meta(path: &Path, parsed: &Parsed) -> Result<CheckpointMeta, NnError> {
    let get = |k: &str| parsed.meta.get(k).ok_or_else(|| NnError::format(path, format!("not a full checkpoint (metadata {k:?} missing)")));
    if get(FORMAT_KEY)? != "full-checkpoint-v1" {
        return Err(NnError::format(path, format!("not a full checkpoint (format {:?})", get(FORMAT_KEY)?)));
    }
    let step: u64 = get("chi.step")?.parse().map_err(|e| NnError::format(path, format!("bad step in metadata: {e}")))?;
    if step > MAX_STEP {
        return Err(NnError::format(path, format!("step {step} in metadata is out of range (at most {MAX_STEP})")));
    }
    Ok(CheckpointMeta {
        step,
        rngs: serde_json::from_str(get("chi.rngs")?).map_err(|e| NnError::format(path, format!("bad RNG states in metadata: {e}")))?,
        config: get("chi.config")?.clone(),
        extra: serde_json::from_str(get("chi.extra")?).map_err(|e| NnError::format(path, format!("bad extra metadata: {e}")))?,
    })
}

/// Loads a full checkpoint into `params` and `optim` and returns its metadata. Everything is
/// validated first; on error nothing is changed.
pub fn load_checkpoint<T: Float>(path: &Path, params: &[Param<T>], optim: &mut Optimizer<T>) -> Result<CheckpointMeta, NnError> {
    let bytes = read_safetensors(path)?;
    load_checkpoint_from_bytes(path, &bytes, params, optim)
}

/// [`load_checkpoint`] from a file's contents already in memory (`name` labels errors). Used by
/// the fuzz targets; never panics on any input.
pub fn load_checkpoint_from_bytes<T: Float>(name: &Path, bytes: &[u8], params: &[Param<T>], optim: &mut Optimizer<T>) -> Result<CheckpointMeta, NnError> {
    let path = name;
    let parsed = parse_bytes(path, bytes)?;
    let meta = parse_meta(path, &parsed)?;
    let values = check_params(path, &parsed, params, true)?;
    // Optimiser state.
    let get = |k: &str| parsed.meta.get(k).ok_or_else(|| NnError::format(path, format!("metadata {k:?} missing")));
    let config: OptimConfig = serde_json::from_str(get("chi.optim.config")?).map_err(|e| NnError::format(path, format!("bad optimiser config: {e}")))?;
    let lr: f64 = get("chi.optim.lr")?.parse().map_err(|e| NnError::format(path, format!("bad optimiser lr: {e}")))?;
    let steps: BTreeMap<String, u64> = serde_json::from_str(get("chi.optim.steps")?).map_err(|e| NnError::format(path, format!("bad optimiser steps: {e}")))?;
    if !lr.is_finite() || lr < 0.0 {
        return Err(NnError::format(path, format!("bad optimiser lr {lr} (must be finite and >= 0)")));
    }
    let mut state = OptimState { config: config.clone(), lr, params: BTreeMap::new() };
    for (name, step) in steps {
        // A parameter is updated at most once per training step.
        if step > meta.step {
            return Err(NnError::format(path, format!("optimiser step count {step} of {name:?} exceeds the checkpoint's step {}", meta.step)));
        }
        let mut slots = BTreeMap::new();
        for slot in config.slot_names() {
            let tname = format!("{OPTIM_PREFIX}{slot}.{name}");
            let (dt, _, bytes) = parsed.tensors.get(&tname).ok_or_else(|| NnError::format(path, format!("missing optimiser tensor {tname:?}")))?;
            if *dt != dtype_of::<T>() {
                return Err(NnError::format(path, format!("optimiser tensor {tname:?} has dtype {dt:?}, expected {:?}", dtype_of::<T>())));
            }
            slots.insert(slot.to_string(), from_bytes::<T>(bytes));
        }
        state.params.insert(name, ParamState { step, slots });
    }
    for name in parsed.tensors.keys().filter(|n| n.starts_with(OPTIM_PREFIX)) {
        let ok = state.params.keys().any(|pn| config.slot_names().iter().any(|s| *name == format!("{OPTIM_PREFIX}{s}.{pn}")));
        if !ok {
            return Err(NnError::format(path, format!("unexpected optimiser tensor {name:?}")));
        }
    }
    optim.check_state(&state, params).map_err(|e| e.in_file(path))?;
    // Everything checked: assign.
    for (prm, v) in params.iter().zip(values) {
        prm.set_values(v);
    }
    optim.load_state(state, params).map_err(|e| e.in_file(path))?;
    Ok(meta)
}

/// File name of the checkpoint of step `step` (`step-00000100.ckpt.safetensors`).
pub fn checkpoint_name(step: u64) -> String {
    format!("step-{step:08}.ckpt.safetensors")
}

/// Deletes all but the newest `keep` full checkpoints (by step) of `dir`; `keep = 0` keeps all.
/// Deletion is best effort: a file that cannot be removed is left.
pub fn prune_checkpoints(dir: &Path, keep: usize) {
    if keep == 0 {
        return;
    }
    let all = list_checkpoints(dir);
    for (_, p) in &all[..all.len().saturating_sub(keep)] {
        let _ = std::fs::remove_file(p);
    }
}

/// Full checkpoints in `dir`, sorted by step.
pub fn list_checkpoints(dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut v: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            let s = n.strip_prefix("step-")?.strip_suffix(".ckpt.safetensors")?.parse().ok()?;
            Some((s, e.path()))
        })
        .collect();
    v.sort();
    v
}

/// The latest full checkpoint in `dir`, if any.
pub fn latest_checkpoint(dir: &Path) -> Option<PathBuf> {
    list_checkpoints(dir).pop().map(|(_, p)| p)
}

#[cfg(test)]
mod atomic_write_tests {
    use super::atomic_write;

    fn dir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("chi-atomic-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A link is followed and kept; a dangling one gets its file; a device stays a device; a
    /// directory is an error.
    #[cfg(unix)]
    #[test]
    fn links_devices_and_directories_are_not_replaced() {
        use std::os::unix::fs::{symlink, FileTypeExt};
        let d = dir("links");
        let target = d.join("target.csv");
        std::fs::write(&target, "keep").unwrap();
        let link = d.join("out.csv");
        symlink("target.csv", &link).unwrap();
        atomic_write(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        let dangling = d.join("dangling.csv");
        symlink("later.csv", &dangling).unwrap();
        atomic_write(&dangling, b"made").unwrap();
        assert_eq!(std::fs::read_to_string(d.join("later.csv")).unwrap(), "made");
        assert!(std::fs::symlink_metadata(&dangling).unwrap().file_type().is_symlink());
        atomic_write(std::path::Path::new("/dev/null"), b"gone").unwrap();
        assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
        let e = atomic_write(&d, b"x").unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
