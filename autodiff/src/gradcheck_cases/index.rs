//! Indexing: flat take / scatter-add and row gather / scatter (embeddings).

use super::*;
use std::rc::Rc;

pub(super) fn cases() -> Vec<OpCase> {
    vec![
        OpCase {
            name: "take",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let n: usize = s.iter().product();
                let idx: Vec<usize> = (0..1 + r.below(6)).map(|_| r.below(n)).collect();
                let len = idx.len();
                let idx = Rc::new(idx);
                case(vec![normal(r, &s)], move |x| x[0].take(idx.clone(), &[len]))
            },
        },
        OpCase {
            name: "scatter_add",
            order2: true,
            make: |r| {
                let k = 1 + r.below(6);
                let n = 1 + r.below(5);
                let idx = Rc::new((0..k).map(|_| r.below(n)).collect::<Vec<_>>());
                case(vec![normal(r, &[k])], move |x| x[0].scatter_add(idx.clone(), &[n]))
            },
        },
        OpCase {
            name: "embedding",
            order2: true,
            make: |r| {
                let (v, d) = (1 + r.below(5), 1 + r.below(4));
                let ids: Vec<usize> = (0..1 + r.below(6)).map(|_| r.below(v)).collect();
                case(vec![normal(r, &[v, d])], move |x| x[0].embedding(&ids))
            },
        },
        OpCase {
            name: "scatter_rows",
            order2: true,
            make: |r| {
                let (k, d, rows) = (1 + r.below(5), 1 + r.below(3), 1 + r.below(4));
                let ids = Rc::new((0..k).map(|_| r.below(rows)).collect::<Vec<_>>());
                case(vec![normal(r, &[k, d])], move |x| x[0].scatter_rows(ids.clone(), rows))
            },
        },
    ]
}
