//! Stopping agents left unused for `limits.stopIdleAgentsAfter`.

use super::*;

impl AgentService {
    /// Stops, now and then, the agents that were left unused too long
    /// (for as long as the service lives).
    pub(super) fn watch_idle(&self) {
        tokio::spawn(idle_check(Arc::downgrade(&self.shared)));
    }
}

async fn idle_check(shared: Weak<Shared>) {
    let period = match shared.upgrade() {
        Some(s) => s.timings.idle_check,
        None => return,
    };
    let mut ticker = tokio::time::interval(period);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let Some(shared) = shared.upgrade() else { return };
        let idle: Vec<String> = {
            let t = lock(&shared.table);
            match t.limits.idle_after() {
                None => Vec::new(),
                Some(limit) => t
                    .agents
                    .iter()
                    .filter(|e| e.state == AgentState::Ready && !e.stopping)
                    .filter(|e| e.last_used.elapsed() >= limit)
                    .map(|e| e.def.name.clone())
                    .collect(),
            }
        };
        let this = AgentService { shared };
        for name in idle {
            let s = this.clone();
            tokio::spawn(async move {
                let _ = s.stop_with(&name, Trigger::IdleTimeout).await;
            });
        }
    }
}
