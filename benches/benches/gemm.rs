//! Placeholder until this benchmark is written; criterion needs a main.
use criterion::{criterion_group, criterion_main, Criterion};
fn nothing(_c: &mut Criterion) {}
criterion_group!(benches, nothing);
criterion_main!(benches);
