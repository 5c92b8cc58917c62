//! The spec's transition table as one pure function. Effects (spawning,
//! signals, timers) are carried out by the supervisor around it.

pub use crate::core::types::AgentState;

/// The spec's "Event" column of the transition table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// ▶ in the Agents panel, or first use.
    StartRequested,
    HandshakeSucceeded,
    /// Handshake failure, a protocol other than ACP v1, or the timeout.
    HandshakeFailed,
    /// A conversation starts using the agent.
    Used,
    /// The last user is done.
    LastUserDone,
    /// ■, the application quits, or the agent was removed from the configuration.
    StopRequested,
    /// Unused for `limits.stopIdleAgentsAfter`.
    IdleTimeout,
    /// Another agent must start and this one is the least recently used idle agent.
    LeastRecentlyUsed,
    /// The process exited on its own.
    ProcessExited,
    /// The connection broke while the process lives on (a line over the
    /// cap, output closed, input not read): the same effect as an exit.
    ConnectionLost,
    /// A start ended (either way) after a stop was requested during it.
    StartEndedAfterStop,
}

/// `None` means the trigger does not apply in that state (nothing happens).
pub fn transition(state: AgentState, trigger: Trigger) -> Option<AgentState> {
    use AgentState::*;
    use Trigger::*;
    match (state, trigger) {
        (Stopped | Error, StartRequested) => Some(Starting),
        (Starting, HandshakeSucceeded) => Some(Ready),
        (Starting, HandshakeFailed) => Some(Error),
        (Ready | Busy, Used) => Some(Busy),
        (Busy, LastUserDone) => Some(Ready),
        (Ready | Busy, StopRequested) => Some(Stopped),
        (Ready, IdleTimeout) => Some(Stopped),
        (Ready, LeastRecentlyUsed) => Some(Stopped),
        (Ready | Busy, ProcessExited | ConnectionLost) => Some(Error),
        // "stopped once the start ends": the stop is recorded, the state waits.
        (Starting, StopRequested) => Some(Starting),
        (Starting, StartEndedAfterStop) => Some(Stopped),
        _ => None,
    }
}

/// The state after `trigger` where the caller knows it must apply; a pair
/// the table does not have is a bug, logged, and `fallback` is taken.
pub fn expected(state: AgentState, trigger: Trigger, fallback: AgentState) -> AgentState {
    transition(state, trigger).unwrap_or_else(|| {
        tracing::error!(?state, ?trigger, "bug: no such transition; taking {fallback:?}");
        fallback
    })
}

#[cfg(test)]
mod tests {
    use super::AgentState::*;
    use super::Trigger::*;
    use super::*;

    // One test per row of the spec's transition table.

    #[test]
    fn row_connection_lost_is_an_error_only_while_running() {
        assert_eq!(transition(Ready, ConnectionLost), Some(Error));
        assert_eq!(transition(Busy, ConnectionLost), Some(Error));
        for s in [Stopped, Starting, Error] {
            assert_eq!(transition(s, ConnectionLost), None);
        }
        assert_eq!(expected(Stopped, ConnectionLost, Stopped), Stopped);
    }

    #[test]
    fn row_start_requested_from_stopped_or_error() {
        assert_eq!(transition(Stopped, StartRequested), Some(Starting));
        assert_eq!(transition(Error, StartRequested), Some(Starting));
        assert_eq!(transition(Ready, StartRequested), None);
        assert_eq!(transition(Busy, StartRequested), None);
    }

    #[test]
    fn row_handshake_succeeds() {
        assert_eq!(transition(Starting, HandshakeSucceeded), Some(Ready));
        assert_eq!(transition(Stopped, HandshakeSucceeded), None);
    }

    #[test]
    fn row_handshake_fails_or_times_out() {
        assert_eq!(transition(Starting, HandshakeFailed), Some(Error));
        assert_eq!(transition(Ready, HandshakeFailed), None);
    }

    #[test]
    fn row_ready_used() {
        assert_eq!(transition(Ready, Used), Some(Busy));
        assert_eq!(transition(Stopped, Used), None);
    }

    #[test]
    fn row_busy_last_user_done() {
        assert_eq!(transition(Busy, LastUserDone), Some(Ready));
        assert_eq!(transition(Ready, LastUserDone), None);
    }

    #[test]
    fn row_stop_requested_when_running() {
        assert_eq!(transition(Ready, StopRequested), Some(Stopped));
        assert_eq!(transition(Busy, StopRequested), Some(Stopped));
        assert_eq!(transition(Stopped, StopRequested), None);
        assert_eq!(transition(Error, StopRequested), None);
    }

    #[test]
    fn row_idle_timeout_only_when_ready() {
        assert_eq!(transition(Ready, IdleTimeout), Some(Stopped));
        assert_eq!(transition(Busy, IdleTimeout), None);
    }

    #[test]
    fn row_least_recently_used_only_when_ready() {
        assert_eq!(transition(Ready, LeastRecentlyUsed), Some(Stopped));
        assert_eq!(transition(Busy, LeastRecentlyUsed), None);
    }

    #[test]
    fn row_process_exits_on_its_own() {
        assert_eq!(transition(Ready, ProcessExited), Some(Error));
        assert_eq!(transition(Busy, ProcessExited), Some(Error));
        assert_eq!(transition(Stopped, ProcessExited), None);
    }

    #[test]
    fn row_stop_while_starting_waits_for_the_start() {
        assert_eq!(transition(Starting, StopRequested), Some(Starting));
        assert_eq!(transition(Starting, StartEndedAfterStop), Some(Stopped));
    }
}
