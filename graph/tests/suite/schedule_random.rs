//! Properties of the static schedule on random graphs (DESIGN.md §18, §22), for every
//! seed and stream limit: the simulating checker accepts the schedule (every
//! dependency on one stream in order or covered by a signal and a wait, no deadlock,
//! stream 0 joins the others), no scope uses more streams than the limit, every
//! runnable node of a scope is scheduled exactly once, a top-level node runs after
//! the nodes it reads in an interleaving the schedule allows, and the schedule prints
//! the same text twice. Removing waits is caught by the checker on some seeds (so the
//! checker is not vacuous).

use std::collections::{HashMap, HashSet};

use uop_graph::random::{RandomOptions, random_graph};
use uop_graph::schedule::{
    CheckError, Schedule, ScheduleOptions, Step, check, print_schedule, schedule, schedule_dot,
};
use uop_graph::{Graph, NodeId, Op, hierarchy};

const SEEDS: u64 = 300;

fn graph(seed: u64) -> Graph {
    random_graph(seed, &RandomOptions::default()).unwrap_or_else(|e| panic!("seed {seed}: {e}"))
}

fn options(max_streams: Option<usize>) -> ScheduleOptions {
    ScheduleOptions {
        max_streams,
        ..ScheduleOptions::default()
    }
}

/// Every schedule in the tree, with its nested ones.
fn all(s: &Schedule) -> Vec<&Schedule> {
    let mut out = vec![s];
    for n in s.nested.values() {
        out.extend(all(n));
    }
    out
}

/// One interleaving the top-level schedule allows (streams in turn, one step each).
fn interleaving(s: &Schedule) -> Vec<NodeId> {
    let mut at = vec![0; s.streams.len()];
    let mut reached = HashSet::new();
    let mut order = Vec::new();
    while at.iter().zip(&s.streams).any(|(a, st)| *a < st.len()) {
        let mut moved = false;
        for (t, steps) in s.streams.iter().enumerate() {
            match steps.get(at[t]) {
                Some(Step::Wait(g)) if !reached.contains(g) => continue,
                Some(Step::Signal(g)) => {
                    reached.insert(*g);
                }
                Some(Step::Run(n)) => order.push(*n),
                _ => {}
            }
            if at[t] < steps.len() {
                at[t] += 1;
                moved = true;
            }
        }
        assert!(moved, "deadlock");
    }
    order
}

#[test]
fn random_schedules_are_valid_within_the_limit_and_print_stably() {
    let mut multi = 0;
    for seed in 0..SEEDS {
        let g = graph(seed);
        let h = hierarchy(&g).expect("hierarchy");
        for max in [None, Some(1), Some(2), Some(3)] {
            let s = schedule(&g, &options(max)).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            check(&g, &s).unwrap_or_else(|e| {
                panic!("seed {seed}, max {max:?}: {e}\n{}", print_schedule(&g, &s))
            });
            if let Some(m) = max {
                assert!(s.max_stream_count() <= m, "seed {seed}: over {m} streams");
            }
            if s.streams.len() > 1 {
                multi += 1;
            }
            // Every runnable node of each scope exactly once.
            for sc in all(&s) {
                let placed: Vec<NodeId> = g
                    .nodes()
                    .iter()
                    .filter(|n| !matches!(n.op, Op::Input { .. } | Op::Const(_)))
                    .filter(|n| h.scope_of(n.id) == Some(sc.scope))
                    .map(|n| n.id)
                    .collect();
                let mut ran = sc.nodes();
                ran.sort();
                let mut want = placed.clone();
                want.sort();
                assert_eq!(ran, want, "seed {seed}: scope {:?}", sc.scope);
            }
            // A top-level node runs after what it reads at the top level.
            let order = interleaving(&s);
            let at: HashMap<NodeId, usize> =
                order.iter().enumerate().map(|(i, n)| (*n, i)).collect();
            for n in &order {
                for r in g.node(*n).expect("node").inputs.iter() {
                    if let Some(&p) = at.get(&r.node) {
                        assert!(p < at[n], "seed {seed}: {n} runs before {}", r.node);
                    }
                }
            }
            let again = schedule(&g, &options(max)).expect("schedules");
            assert_eq!(print_schedule(&g, &s), print_schedule(&g, &again));
            assert_eq!(schedule_dot(&g, &s), schedule_dot(&g, &again));
        }
    }
    assert!(
        multi > SEEDS / 4,
        "only {multi} schedules use several streams"
    );
}

#[test]
fn removing_a_wait_is_caught_on_some_seeds() {
    let mut caught = 0;
    for seed in 0..SEEDS {
        let g = graph(seed);
        let s = schedule(&g, &options(None)).expect("schedules");
        for (t, steps) in s.streams.iter().enumerate() {
            for (i, step) in steps.iter().enumerate() {
                if !matches!(step, Step::Wait(_)) {
                    continue;
                }
                let mut broken = s.clone();
                broken.streams[t].remove(i);
                match check(&g, &broken) {
                    Err(CheckError::MissingWait { .. } | CheckError::NotJoined(_)) => caught += 1,
                    Err(e) => panic!("seed {seed}: unexpected {e}"),
                    Ok(()) => {}
                }
            }
        }
    }
    assert!(caught > 50, "only {caught} removed waits caught");
}

#[test]
fn the_random_test_mode_gives_valid_schedules_within_the_limit() {
    let mut several = 0;
    for seed in 0..SEEDS {
        let g = graph(seed);
        if hierarchy(&g).is_err() {
            continue;
        }
        for streams in 1..=4 {
            let options = ScheduleOptions {
                max_streams: Some(streams),
                random: Some(seed),
                ..ScheduleOptions::default()
            };
            let s = schedule(&g, &options).expect("schedules");
            check(&g, &s).unwrap_or_else(|e| panic!("seed {seed}, {streams} streams: {e}"));
            for scope in all(&s) {
                assert!(scope.streams.len() <= streams, "seed {seed}");
            }
            several += usize::from(s.max_stream_count() > 1);
            // The same seed draws the same schedule.
            assert_eq!(schedule(&g, &options).expect("schedules"), s);
        }
    }
    assert!(several > SEEDS as usize, "{several} multi-stream schedules");
}
