//! `gpuscope inspect` over a capture written by the trace crate's fixture.

use gpuscope_report::inspect::{inspect, MANY_CONSTANT_SETS};
use gpuscope_report::render::capture as render;
use gpuscope_trace::capture::read_capture;

fn fixture(variants: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    gpuscope_trace::fixtures::write_capture(dir.path(), variants, 3);
    dir
}

#[test]
fn inspect_flags_a_shader_built_with_many_constant_sets() {
    let few = read_capture(fixture(MANY_CONSTANT_SETS).path()).unwrap();
    let i = inspect(&few, 10);
    assert!(!i.shaders[0].many_constant_sets);
    let many = read_capture(fixture(MANY_CONSTANT_SETS + 1).path()).unwrap();
    let i = inspect(&many, 3);
    assert!(i.shaders[0].many_constant_sets);
    assert_eq!(i.unique_commands, MANY_CONSTANT_SETS + 1);
    assert_eq!(i.top_commands.len(), 3);
    // Slowest first: the fixture's dispatch d takes 100·(d+1) ns.
    assert_eq!(i.top_commands[0].label, format!("copy{MANY_CONSTANT_SETS}"));
    let text = render::render_inspection(&i);
    assert!(
        text.contains("many constant sets") && text.contains("uniform"),
        "{text}"
    );
}
