//! What a batch of the writer's joins before it is written: a stream's
//! text deltas to one part, one append.

use super::ops::Op;
#[cfg(test)]
use crate::core::types::message::PartKind;

/// Text deltas to the same part become one, within each run of text
/// deltas: agents streaming at once interleave theirs, and a row a chunk
/// made the writer the busiest thread (`cargo bench --bench window --
/// agents`). Each part's text keeps its order; any other op ends the run,
/// so nothing moves past it.
pub(super) fn join_text(ops: Vec<Op>) -> Vec<Op> {
    let mut out: Vec<Op> = Vec::with_capacity(ops.len());
    // Where in `out` each part's delta of the current run is.
    let mut run: Vec<usize> = Vec::new();
    for op in ops {
        let Op::Delta {
            conversation,
            message_id,
            index,
            kind,
            text: Some(t),
            part: None,
        } = &op
        else {
            run.clear();
            out.push(op);
            continue;
        };
        let same = run.iter().copied().find(|&i| {
            matches!(&out[i], Op::Delta { conversation: c0, message_id: m0, index: i0, kind: k0, .. }
                if c0 == conversation && m0 == message_id && i0 == index && k0 == kind)
        });
        if let Some(Op::Delta { text: Some(t0), .. }) = same.map(|i| &mut out[i]) {
            t0.push_str(t);
            continue;
        }
        run.push(out.len());
        out.push(op);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(message: &str, text: &str) -> Op {
        Op::Delta {
            conversation: "c".into(),
            message_id: message.into(),
            index: 0,
            kind: PartKind::Text,
            text: Some(text.into()),
            part: None,
        }
    }

    fn texts(ops: &[Op]) -> Vec<(String, String)> {
        ops.iter()
            .map(|op| match op {
                Op::Delta { message_id, text, .. } => (message_id.clone(), text.clone().unwrap_or_default()),
                _ => ("-".into(), String::new()),
            })
            .collect()
    }

    #[test]
    fn interleaved_deltas_join_per_part_in_order() {
        let ops = vec![
            delta("a", "1"),
            delta("b", "x"),
            delta("a", "2"),
            delta("b", "y"),
            delta("a", "3"),
        ];
        assert_eq!(
            texts(&join_text(ops)),
            vec![("a".into(), "123".into()), ("b".into(), "xy".into())]
        );
    }

    #[test]
    fn another_op_ends_the_run() {
        let ops = vec![
            delta("a", "1"),
            Op::RemoveMessage {
                conversation: "c".into(),
                message_id: "a".into(),
            },
            delta("a", "2"),
        ];
        assert_eq!(
            texts(&join_text(ops)),
            vec![
                ("a".into(), "1".into()),
                ("-".into(), String::new()),
                ("a".into(), "2".into())
            ]
        );
    }
}
