//! Properties of the static schedule on random graphs (DESIGN.md §18, §22), for every
//! seed and stream limit: the simulating checker accepts the schedule (every
//! dependency on one stream in order or covered by a signal and a wait, no deadlock,
//! stream 0 joins the others), no scope uses more streams than the limit, every
//! runnable node of a scope is scheduled exactly once, a top-level node runs after
//! the nodes it reads in an interleaving the schedule allows, and the schedule prints
//! the same text twice. Removing waits is caught by the checker on some seeds (so the
//! checker is not vacuous). At the stream cap: wide random DAGs get valid schedules,
//! and equal joined towers spread evenly.

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

/// A small deterministic generator for the graphs below (xorshift).
struct Draw(u64);

impl Draw {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// A wide random DAG: 24 element-wise nodes on 2 to 6 lanes, each continuing a lane
/// drawn at random and, one time in four, reading a node of another lane too.
fn lanes(seed: u64) -> Graph {
    let mut d = Draw(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let count = 2 + d.below(5);
    let mut last: Vec<Option<usize>> = vec![None; count];
    let mut used = [false; 24];
    let mut src = String::from("input x: f32[4]\n");
    let name = |n: Option<usize>| n.map_or("x".to_string(), |n| format!("n{n}"));
    for k in 0..24 {
        let lane = d.below(count);
        let a = last[lane];
        let line = if k > 0 && d.below(4) == 0 {
            let b = d.below(k);
            used[b] = true;
            format!("n{k} = add({}, n{b})\n", name(a))
        } else {
            let op = ["exp", "sin", "cos"][d.below(3)];
            format!("n{k} = {op}({})\n", name(a))
        };
        if let Some(a) = a {
            used[a] = true;
        }
        src.push_str(&line);
        last[lane] = Some(k);
    }
    let outs: Vec<String> = (0..24)
        .filter(|&k| !used[k])
        .map(|k| format!("n{k}"))
        .collect();
    src.push_str(&format!("output {}\n", outs.join(", ")));
    uop_graph::text::parse_graph(&src, uop_graph::default_registry())
        .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{src}"))
}

#[test]
fn wide_random_dags_capped_at_2_and_3_streams_are_valid() {
    let mut capped = 0;
    for seed in 0..SEEDS {
        let g = lanes(seed);
        let wide = schedule(&g, &options(None))
            .expect("schedules")
            .streams
            .len();
        for max in [2, 3] {
            let s = schedule(&g, &options(Some(max))).expect("schedules");
            check(&g, &s).unwrap_or_else(|e| {
                panic!("seed {seed}, max {max}: {e}\n{}", print_schedule(&g, &s))
            });
            assert!(s.streams.len() <= max, "seed {seed}: over {max} streams");
            let mut ran = s.nodes();
            ran.sort();
            assert_eq!(ran.len(), 24, "seed {seed}: every node once");
            ran.dedup();
            assert_eq!(ran.len(), 24, "seed {seed}: every node once");
            capped += usize::from(wide > max);
        }
    }
    assert!(
        capped > SEEDS as usize / 2,
        "only {capped} schedules hit the cap"
    );
}

/// `towers` independent chains of `length` nodes on `x`, joined by a tree of `add`s.
fn joined_towers(towers: usize, length: usize) -> Graph {
    let mut src = String::from("input x: f32[4]\n");
    let mut outs = Vec::new();
    for t in 0..towers {
        let mut last = "x".to_string();
        for l in 0..length {
            src.push_str(&format!("t{t}_{l} = exp({last})\n"));
            last = format!("t{t}_{l}");
        }
        outs.push(last);
    }
    uop_graph::random::join_with_adds(&mut src, outs);
    uop_graph::text::parse_graph(&src, uop_graph::default_registry()).expect("parses")
}

/// The balance at the cap counts nodes, so towers of one node weigh as much as the
/// joins between them (5 such towers on 3 streams give 1, 3, 1 towers and 4, 3, 2
/// nodes): from two nodes on, no stream holds more than its share of towers.
#[test]
fn equal_joined_towers_spread_evenly_over_the_capped_streams() {
    for towers in 2..=8 {
        for length in 2..=5 {
            let g = joined_towers(towers, length);
            for max in 2..=4 {
                let s = schedule(&g, &options(Some(max))).expect("schedules");
                check(&g, &s).expect("valid");
                // The towers each stream holds (by their first node).
                let mut per_stream = vec![0; s.streams.len()];
                for node in g.nodes() {
                    if node.name(0).is_some_and(|n| n.ends_with("_0")) {
                        per_stream[s.stream_of[&node.id]] += 1;
                    }
                }
                let most = towers.div_ceil(max);
                assert!(
                    per_stream.iter().all(|&c| c <= most),
                    "{towers} towers of {length}, {max} streams: {per_stream:?}\n{}",
                    print_schedule(&g, &s)
                );
            }
        }
    }
}
