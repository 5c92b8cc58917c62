//! What a session has used: its context window (`usage_update`), its cost
//! where the agent tells it, and the tokens of each turn, which agents tell
//! in different places (read by [`TurnTokens::from_prompt_result`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Usage {
    pub used: u64,
    pub size: u64,
    /// The session's cost so far, where the agent tells it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// The last turn's tokens, where the agent told them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnTokens>,
    /// The tokens of every turn of the session so far that told them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TurnTokens>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub amount: f64,
    /// An ISO 4217 code, e.g. "USD".
    pub currency: String,
}

/// The tokens of one turn (or a sum of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TurnTokens {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    /// Input read from the provider's cache, where told (part of the total).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_read_tokens: u64,
    /// Reasoning, where told apart (part of the output or the total).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub thought_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A count under any of `names`, as a whole number no larger than a
/// thousand billion (an agent's nonsense is not summed).
fn count(v: &Value, names: &[&str]) -> Option<u64> {
    names
        .iter()
        .find_map(|n| v.get(n)?.as_u64())
        .filter(|n| *n <= 1_000_000_000_000)
}

impl TurnTokens {
    /// One object of counts, in the names the agents use: ACP's
    /// `inputTokens`/`outputTokens`/`totalTokens`, gemini-cli's snake case,
    /// OpenAI's `prompt_tokens`/`completion_tokens`.
    fn read(v: &Value) -> Option<TurnTokens> {
        let input = count(
            v,
            &["inputTokens", "input_tokens", "promptTokens", "prompt_tokens"],
        );
        let output = count(
            v,
            &[
                "outputTokens",
                "output_tokens",
                "completionTokens",
                "completion_tokens",
            ],
        );
        let total = count(v, &["totalTokens", "total_tokens"]);
        if input.is_none() && output.is_none() && total.is_none() {
            return None;
        }
        let (input, output) = (input.unwrap_or(0), output.unwrap_or(0));
        let cached_read = count(
            v,
            &[
                "cachedReadTokens",
                "cachedInputTokens",
                "cached_input_tokens",
                "cache_read_input_tokens",
            ],
        )
        .unwrap_or(0);
        Some(TurnTokens {
            input_tokens: input,
            output_tokens: output,
            total_tokens: total.unwrap_or(input + output),
            cached_read_tokens: cached_read,
            thought_tokens: count(
                v,
                &[
                    "thoughtTokens",
                    "reasoningOutputTokens",
                    "reasoning_output_tokens",
                ],
            )
            .unwrap_or(0),
        })
    }

    /// The turn's tokens from `session/prompt`'s raw answer: its `usage`
    /// (ACP, unstable: opencode, kilo, claude-agent-acp, codex-acp), else
    /// `_meta.quota.token_count` (gemini-cli, and the same figures from
    /// claude-agent-acp and codex-acp). One source only, so nothing is
    /// counted twice.
    pub fn from_prompt_result(answer: &Value) -> Option<TurnTokens> {
        answer
            .get("usage")
            .filter(|u| u.is_object())
            .and_then(TurnTokens::read)
            .or_else(|| {
                answer
                    .pointer("/_meta/quota/token_count")
                    .and_then(TurnTokens::read)
            })
    }

    /// The sum of two (a session's turns).
    pub fn plus(self, other: TurnTokens) -> TurnTokens {
        TurnTokens {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            total_tokens: self.total_tokens.saturating_add(other.total_tokens),
            cached_read_tokens: self.cached_read_tokens.saturating_add(other.cached_read_tokens),
            thought_tokens: self.thought_tokens.saturating_add(other.thought_tokens),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_agents_turn_tokens_are_read_once() {
        // claude-agent-acp 0.101: `usage` and `_meta.quota` both: `usage` wins.
        let claude = json!({"stopReason": "end_turn",
            "usage": {"inputTokens": 10, "outputTokens": 5, "cachedReadTokens": 100, "cachedWriteTokens": 0, "totalTokens": 115},
            "_meta": {"quota": {"token_count": {"totalTokens": 999, "inputTokens": 1, "outputTokens": 1}}}});
        let t = TurnTokens::from_prompt_result(&claude).expect("tokens");
        assert_eq!(
            (
                t.input_tokens,
                t.output_tokens,
                t.total_tokens,
                t.cached_read_tokens
            ),
            (10, 5, 115, 100)
        );
        // codex-acp 2.6 with `usage: null`: the quota.
        let codex = json!({"usage": null, "_meta": {"quota": {"token_count": {"totalTokens": 30, "inputTokens": 20,
            "cachedInputTokens": 0, "cacheWriteInputTokens": 0, "outputTokens": 10, "reasoningOutputTokens": 4}}}});
        let t = TurnTokens::from_prompt_result(&codex).expect("tokens");
        assert_eq!((t.total_tokens, t.thought_tokens), (30, 4));
        // gemini-cli 0.61: snake case, no total.
        let gemini = json!({"_meta": {"quota": {"token_count": {"input_tokens": 7, "output_tokens": 3}}}});
        assert_eq!(
            TurnTokens::from_prompt_result(&gemini).map(|t| t.total_tokens),
            Some(10)
        );
        // A cancelled turn tells nothing; nonsense is not a count.
        assert_eq!(
            TurnTokens::from_prompt_result(&json!({"stopReason": "cancelled"})),
            None
        );
        assert_eq!(
            TurnTokens::from_prompt_result(&json!({"usage": {"inputTokens": -1, "outputTokens": "x"}})),
            None
        );
        let sum = t_of(1, 2).plus(t_of(3, 4));
        assert_eq!(
            (sum.input_tokens, sum.output_tokens, sum.total_tokens),
            (4, 6, 10)
        );
    }

    fn t_of(i: u64, o: u64) -> TurnTokens {
        TurnTokens {
            input_tokens: i,
            output_tokens: o,
            total_tokens: i + o,
            ..Default::default()
        }
    }
}
