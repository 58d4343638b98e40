//! Generates Rust types from the vendored subset of Perfetto's trace schema
//! (`proto/perfetto_trace.proto`) for the tests: they decode the traces that
//! `render::perfetto` writes with these types, which share nothing with the writer's
//! own message structs, so a wrong field number or type in the writer fails a test.
//! protox compiles the schema in Rust: no `protoc` binary is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/perfetto_trace.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
