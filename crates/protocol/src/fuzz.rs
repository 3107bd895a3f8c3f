//! One entry point that runs every decoder of the crate on arbitrary bytes, for fuzzing.
//!
//! `decode_any` must never panic, loop without bound or allocate much more than its input,
//! whatever the bytes. It is what a `cargo fuzz` target calls; the unit test below runs it over
//! a few thousand seeded random inputs and mutations of valid packets.

use crate::binary::params::read_binary_value;
use crate::binary::{ParamType, StatementParams, encode_binary_row};
use crate::codec::{Reader, read_lenenc_bytes, read_lenenc_int};
use crate::command::{Command, parse_command};
use crate::constants::ColumnType;
use crate::constants::capabilities::{CLIENT_PROTOCOL_41, CLIENT_QUERY_ATTRIBUTES, CLIENT_SECURE_CONNECTION};
use crate::handshake::{parse_change_user, parse_client_hello, parse_handshake_response};
use crate::packet::PacketDecoder;

/// Capability sets every decoder is tried under.
const CAPABILITY_SETS: [u32; 4] =
    [0, CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION, CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_QUERY_ATTRIBUTES, u32::MAX];
/// Parameter counts execute blocks are tried with.
const PARAM_COUNTS: [u16; 5] = [0, 1, 2, 5, 17];
/// Payload limit for the framing pass: small, so the too-large path is exercised too.
const FUZZ_MAX_PAYLOAD_LEN: usize = 4096;

/// Runs every decoder on `bytes`, discarding the results.
pub fn decode_any(bytes: &[u8]) {
    decode_frames(bytes);
    let _ = parse_client_hello(bytes);
    let _ = parse_handshake_response(bytes);
    let _ = read_lenenc_int(bytes);
    let _ = read_lenenc_bytes(bytes);
    let flags = bytes.first().copied().unwrap_or(0);
    for capabilities in CAPABILITY_SETS {
        let _ = parse_change_user(bytes, capabilities);
        if let Ok(Command::StmtExecute { flags, params, .. }) = parse_command(bytes, capabilities) {
            decode_params(&params, flags, capabilities);
        }
        decode_params(bytes, flags, capabilities);
    }
    decode_values(bytes);
}

fn decode_frames(bytes: &[u8]) {
    let mut decoder = PacketDecoder::new(FUZZ_MAX_PAYLOAD_LEN);
    decoder.set_expected_seq(bytes.get(3).copied().unwrap_or(0));
    decoder.feed(bytes);
    // Each packet consumes at least one header, so this ends.
    while let Ok(Some(_)) = decoder.next_packet() {}
}

fn decode_params(params: &[u8], flags: u8, capabilities: u32) {
    for num_params in PARAM_COUNTS {
        let mut statement = StatementParams::new(num_params);
        let _ = statement.append_long_data(0, params.get(..3).unwrap_or_default());
        let _ = statement.decode_execute(params, flags, capabilities);
        // A second execute reuses whatever types the first one bound.
        let _ = statement.decode_execute(params.get(1..).unwrap_or_default(), flags, capabilities);
    }
}

/// Decodes one value of every type from the front of `bytes` and encodes it back.
fn decode_values(bytes: &[u8]) {
    for type_byte in 0..=u8::MAX {
        let Some(column_type) = ColumnType::from_u8(type_byte) else {
            continue;
        };
        for unsigned in [false, true] {
            let mut reader = Reader::new(bytes);
            if let Ok(value) = read_binary_value(&mut reader, ParamType { column_type, unsigned }) {
                let mut row = Vec::new();
                let _ = encode_binary_row(&mut row, &[column_type], std::slice::from_ref(&value));
                let _ = value.to_text();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    /// Valid packets to mutate: a handshake response, an execute, a query with attributes.
    fn seeds() -> Vec<Vec<u8>> {
        let mut response = Vec::new();
        response.extend_from_slice(&u32::MAX.to_le_bytes());
        response.extend_from_slice(&[0, 0, 0, 1, 255]);
        response.extend_from_slice(&[0; 23]);
        response.extend_from_slice(b"root\0\x02ab\0shop\0caching_sha2_password\0\x06\x01k\x01v\x00\x03");
        let execute = vec![0x17, 1, 0, 0, 0, 8, 1, 0, 0, 0, 2, 0, 1, 8, 0, 12, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 11];
        let query = vec![0x03, 1, 1, 0, 1, 253, 0, 1, b'a', 1, b'b', b'S'];
        vec![response, execute, query]
    }

    #[test]
    fn decode_any_survives_seeded_random_and_mutated_inputs() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x5155_494C);
        for _ in 0..3000 {
            let len = rng.random_range(0..160);
            let bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            decode_any(&bytes);
        }
        for seed in seeds() {
            decode_any(&seed);
            for _ in 0..1000 {
                let mut bytes = seed.clone();
                for _ in 0..rng.random_range(1..4) {
                    let index = rng.random_range(0..bytes.len());
                    bytes[index] = rng.random();
                }
                bytes.truncate(rng.random_range(0..=bytes.len()));
                decode_any(&bytes);
            }
        }
    }
}
