//! `parley-demo-agent`: the ACP v1 agent that ships with Parley (see
//! `parley::demo_agent`). Parley also runs it as an agent's guardian
//! (`--agent-guardian`, see `parley::core::supervisor::guardian`): it is the
//! smallest of Parley's programs.

fn main() {
    parley::core::supervisor::guardian::run_if_asked();
    parley::core::remote::helper::run_if_asked();
    // A copy of this program on another host is started so by the helper.
    parley::demo_agent::run_if_asked();
    parley::demo_agent::main(std::env::args().skip(1).collect());
}
