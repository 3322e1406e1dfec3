//! Proto3 JSON of the service's messages: camelCase field names, enum names, default
//! values left out — the shape `grpcurl` prints. Used by the CLI's `--json` output.

use super::pb;
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage};
use std::sync::OnceLock;

fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| {
        DescriptorPool::decode(pb::FILE_DESCRIPTOR_SET).expect("the built-in descriptor set")
    })
}

/// The proto3 JSON of `msg`, whose full protobuf name is `name` (e.g.
/// `tavli.v1.ListLegalPlaysResponse`), as a `serde_json::Value`.
///
/// Panics if `name` is not a message of `tavli/v1/engine.proto` (a programming error).
pub fn to_json<M: Message>(msg: &M, name: &str) -> serde_json::Value {
    let desc = pool()
        .get_message_by_name(name)
        .unwrap_or_else(|| panic!("unknown message {name}"));
    let dynamic = DynamicMessage::decode(desc, msg.encode_to_vec().as_slice())
        .expect("a message re-decodes with its own descriptor");
    serde_json::to_value(&dynamic).expect("proto3 JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpcurl_shape() {
        let msg = pb::ResolveOpeningRollResponse {
            starter: pb::Side::Black as i32,
            roll_again: false,
        };
        let v = to_json(&msg, "tavli.v1.ResolveOpeningRollResponse");
        assert_eq!(v, serde_json::json!({"starter": "SIDE_BLACK"}));
    }
}
