//! `parley-demo-agent`: the ACP v1 agent that ships with Parley (see
//! `parley::demo_agent`).

fn main() {
    parley::demo_agent::main(std::env::args().skip(1).collect());
}
