//! The marks of a loop header (`[parallel, tile(packed b[i1, i2]), rows(packed a[i0, i1]), block reduction]`)
//! and their arguments, which name loads or writes of the loop's body and are
//! resolved into positions once the body is read (grammar: the parent module).

use super::{Fail, PResult, Reader, SyntaxError, err, sp, token};
use crate::loops::analysis::{self, load_position};
use crate::loops::ir::{Access, LoadSet, Loop, Schedule, Tile};

/// What a mark's argument names: the load a `split` loop's chunks align to, the
/// packed loads of a `tile` or of its `rows`, or the write a `parallel` loop's
/// shares align to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ArgKind {
    Aligned,
    Packed,
    Rows,
    Lines,
}

/// A mark's argument as read at the loop header: the accesses it names, each with
/// where its text starts.
pub(super) struct Arg<'s> {
    kind: ArgKind,
    accesses: Vec<(&'s str, Access)>,
}

impl<'s> Reader<'s> {
    /// The marks after `[`, up to `]`, and the arguments naming loads or writes of
    /// the loop's body, which [`Reader::resolve`] reads once the body is parsed.
    pub(super) fn marks(&self, i: &'s str) -> PResult<'s, (Schedule, Vec<Arg<'s>>)> {
        const MARKS: &str = "a mark: `parallel`, `pieces`, `split`, `blocked`, `jammed`, `chunked`, `line split`, `joined`, `tile`, `rows` or `block reduction`";
        let (rest, words) = self.list(i, "]", |r, i| r.mark(i))?;
        let mut s = Schedule::default();
        let mut args = Vec::new();
        let mut rows = false;
        for (at, word, arg) in words {
            let rows_arg = matches!(
                arg,
                Some(Arg {
                    kind: ArgKind::Rows,
                    ..
                })
            );
            if let Some(arg) = arg {
                args.push(arg);
            }
            let flag = match word {
                "parallel" => &mut s.parallel,
                "pieces" => &mut s.pieces,
                "split" => &mut s.split,
                "blocked" => &mut s.blocked,
                "jammed" => &mut s.jammed,
                "chunked" => &mut s.chunked,
                "line split" => &mut s.line_split,
                "joined" => &mut s.joined,
                "tile" => {
                    if s.tile.is_some() {
                        return err(at, "each mark once");
                    }
                    s.tile = Some(Tile {
                        block_reduction: false,
                        packed: LoadSet::default(),
                        rows: LoadSet::default(),
                    });
                    continue;
                }
                // Only with its argument, which `resolve` reads into the tile.
                "rows" => {
                    if s.tile.is_none() {
                        return err(at, "`tile` before `rows`");
                    }
                    if !rows_arg {
                        return err(at, "`rows(packed ...)`");
                    }
                    if std::mem::replace(&mut rows, true) {
                        return err(at, "each mark once");
                    }
                    continue;
                }
                "block reduction" => match &mut s.tile {
                    Some(t) if !t.block_reduction => {
                        t.block_reduction = true;
                        continue;
                    }
                    Some(_) => return err(at, "each mark once"),
                    None => return err(at, "`tile` before `block reduction`"),
                },
                _ => return err(at, MARKS),
            };
            if *flag {
                return err(at, "each mark once");
            }
            *flag = true;
        }
        Ok((rest, (s, args)))
    }

    /// One mark: its name and, for `split(aligned x)`, `tile(packed a, b)`,
    /// `rows(packed a)` and `parallel(lines y)`, its argument.
    fn mark(&self, i: &'s str) -> PResult<'s, (&'s str, &'s str, Option<Arg<'s>>)> {
        let at = sp(i);
        let end = at
            .find(|c: char| !(c.is_ascii_alphabetic() || c == ' '))
            .unwrap_or(at.len());
        let word = at[..end].trim_end();
        let rest = &at[end..];
        let Some(inner) = rest.strip_prefix('(') else {
            return Ok((rest, (at, word, None)));
        };
        let (kind, lead) = match word {
            "split" => (ArgKind::Aligned, "aligned"),
            "tile" => (ArgKind::Packed, "packed"),
            "rows" => (ArgKind::Rows, "packed"),
            "parallel" => (ArgKind::Lines, "lines"),
            _ => {
                return err(
                    rest,
                    "`,` or `]` (only `split`, `tile`, `rows` and `parallel` take an argument)",
                );
            }
        };
        let (inner, ()) = token(
            inner,
            lead,
            match kind {
                ArgKind::Aligned => "`aligned`",
                ArgKind::Packed | ArgKind::Rows => "`packed`",
                ArgKind::Lines => "`lines`",
            },
        )?;
        let (rest, accesses) = self.list(inner, ")", |r, i| {
            let (rest, a) = r.access(i)?;
            Ok((rest, (sp(i), a)))
        })?;
        if kind == ArgKind::Lines && accesses.len() != 1 {
            return err(inner, "one write after `lines`");
        }
        if kind == ArgKind::Aligned && accesses.len() != 1 {
            return err(inner, "one load after `aligned`");
        }
        Ok((rest, (at, word, Some(Arg { kind, accesses }))))
    }

    /// Resolves the arguments of the marks of `loops` (the arguments of loop `d`
    /// are `args[d]`) into positions: of the loads of the loop's own statements for
    /// `aligned` ([`loads`](analysis::loads)), of the loads or writes of its body for
    /// `packed` (of a tile or its rows) and `lines`
    /// ([`body_accesses`](analysis::body_accesses)).
    pub(super) fn resolve(loops: &mut [Loop], args: Vec<Vec<Arg<'s>>>) -> Result<(), Fail<'s>> {
        for (d, args) in args.into_iter().enumerate() {
            for arg in args {
                if arg.kind == ArgKind::Aligned {
                    // The load is named among the loop's own statements' loads
                    // (`analysis::loads`), as the `align` pass and the verifier count.
                    let (at, a) = &arg.accesses[0];
                    let k = load_position(&loops[d], a)
                        .ok_or_else(|| SyntaxError::new(at, "a load of this loop's statements"))?;
                    loops[d].schedule.aligned = Some(k);
                    continue;
                }
                let write = arg.kind == ArgKind::Lines;
                let body = analysis::body_accesses(&loops[d..], write);
                let mut set = LoadSet::default();
                for (at, a) in &arg.accesses {
                    let k = body
                        .iter()
                        .position(|b| b.tensor == a.tensor && b.index == a.index)
                        .ok_or_else(|| {
                            SyntaxError::new(
                                at,
                                if write {
                                    "a write of this loop's body"
                                } else {
                                    "a load of this loop's body"
                                },
                            )
                        })?;
                    if !set.insert(k) {
                        return Err(SyntaxError::new(
                            at,
                            "a load among the first 64 of the loop's body",
                        ));
                    }
                }
                let s = &mut loops[d].schedule;
                match (arg.kind, s.tile.as_mut()) {
                    (ArgKind::Packed, Some(t)) => t.packed = set,
                    (ArgKind::Rows, Some(t)) => t.rows = set,
                    (ArgKind::Packed | ArgKind::Rows, None) => {}
                    (ArgKind::Lines, _) => {
                        s.lines = set.iter().next().and_then(|k| u8::try_from(k).ok());
                    }
                    // Resolved above, among the loop's own statements.
                    (ArgKind::Aligned, _) => {}
                }
            }
        }
        Ok(())
    }
}
