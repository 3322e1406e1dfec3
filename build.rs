//! Compiles `proto/tavli/v1/engine.proto` with `protox` (pure Rust, no system `protoc`)
//! into Rust messages, the tonic server and client, and writes the encoded file
//! descriptor set (`$OUT_DIR/tavli_v1_descriptor.bin`) served by gRPC reflection.

use protox::prost::Message as _;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let fds = protox::compile(["tavli/v1/engine.proto"], ["proto"])?;
    let descriptor = out.join("tavli_v1_descriptor.bin");
    std::fs::write(&descriptor, fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .file_descriptor_set_path(&descriptor)
        .compile_fds(fds)?;
    Ok(())
}
