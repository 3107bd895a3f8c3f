//! Byte-level tests of the server replies in `response`.

use super::*;
use crate::constants::capabilities::{CLIENT_DEPRECATE_EOF, CLIENT_PROTOCOL_41, CLIENT_SESSION_TRACK};
use crate::constants::status::{SERVER_MORE_RESULTS_EXISTS, SERVER_STATUS_AUTOCOMMIT};
use crate::constants::{charset, column_flags};

const CAPS: u32 = CLIENT_PROTOCOL_41;
const CAPS_NO_EOF: u32 = CLIENT_PROTOCOL_41 | CLIENT_DEPRECATE_EOF;

/// Splits framed output into (seq, payload) pairs.
fn frames(bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut decoder = crate::packet::PacketDecoder::new(crate::packet::DEFAULT_MAX_ALLOWED_PACKET);
    decoder.set_expected_seq(bytes[3]);
    decoder.feed(bytes);
    let mut packets = Vec::new();
    while let Some(packet) = decoder.next_packet().unwrap() {
        packets.push(packet);
    }
    assert_eq!(decoder.buffered_len(), 0);
    packets
}

fn payloads(writer: &PacketWriter) -> Vec<Vec<u8>> {
    frames(&writer.buf).into_iter().map(|(_, payload)| payload).collect()
}

fn int_column(name: &str) -> ColumnDefinition {
    ColumnDefinition {
        schema: "shop".into(),
        table: "t".into(),
        org_table: "items".into(),
        name: name.into(),
        org_name: name.into(),
        charset: charset::BINARY,
        column_length: 11,
        column_type: ColumnType::Long,
        flags: column_flags::NOT_NULL_FLAG | column_flags::NUM_FLAG,
        decimals: 0,
    }
}

#[test]
fn ok_packet_plain() {
    let mut writer = PacketWriter::new(1);
    let ok = OkPacket { affected_rows: 3, last_insert_id: 300, status_flags: SERVER_STATUS_AUTOCOMMIT, warnings: 1, ..OkPacket::default() };
    write_ok(&mut writer, CAPS, &ok);
    assert_eq!(writer.buf, [9, 0, 0, 1, 0x00, 3, 0xFC, 0x2C, 0x01, 2, 0, 1, 0]);
}

#[test]
fn ok_packet_info_with_and_without_session_track() {
    let ok = OkPacket { info: "Rows matched: 1", ..OkPacket::default() };
    let mut writer = PacketWriter::new(1);
    write_ok(&mut writer, CAPS, &ok);
    // Regression: the info string is length-encoded with or without session tracking,
    // as MySQL sends it; the Rust `mysql` crate failed to parse the raw form.
    assert_eq!(payloads(&writer)[0], b"\x00\x00\x00\x00\x00\x00\x00\x0fRows matched: 1");
    let mut writer = PacketWriter::new(1);
    write_ok(&mut writer, CAPS | CLIENT_SESSION_TRACK, &ok);
    assert_eq!(payloads(&writer)[0], b"\x00\x00\x00\x00\x00\x00\x00\x0fRows matched: 1");
    let mut writer = PacketWriter::new(1);
    write_ok(&mut writer, CAPS | CLIENT_SESSION_TRACK, &OkPacket::default());
    assert_eq!(payloads(&writer)[0], [0; 7], "empty info is omitted under session tracking");
}

#[test]
fn ok_packet_with_session_state_changes() {
    let changes = [SessionStateChange::Schema("db"), SessionStateChange::SystemVariable { name: "a", value: "b" }];
    let ok = OkPacket { session_state_changes: &changes, ..OkPacket::default() };
    let mut writer = PacketWriter::new(1);
    write_ok(&mut writer, CAPS | CLIENT_SESSION_TRACK, &ok);
    let status = (SERVER_SESSION_STATE_CHANGED).to_le_bytes();
    let mut expected = vec![0x00, 0, 0, status[0], status[1], 0, 0, 0];
    expected.extend_from_slice(&[11, SESSION_TRACK_SCHEMA, 3, 2, b'd', b'b', SESSION_TRACK_SYSTEM_VARIABLES, 4, 1, b'a', 1, b'b']);
    assert_eq!(payloads(&writer)[0], expected);
    // Without the capability the changes are not reported.
    let mut writer = PacketWriter::new(1);
    write_ok(&mut writer, CAPS, &ok);
    assert_eq!(payloads(&writer)[0], [0; 7]);
}

#[test]
fn eof_ok_packet_has_header_0xfe() {
    let mut writer = PacketWriter::new(5);
    write_eof_ok(&mut writer, CAPS_NO_EOF, &OkPacket { status_flags: 2, ..OkPacket::default() });
    assert_eq!(writer.buf, [7, 0, 0, 5, 0xFE, 0, 0, 2, 0, 0, 0]);
}

#[test]
fn err_packet() {
    let mut writer = PacketWriter::new(1);
    write_err(&mut writer, CAPS, 1146, "42S02", "Table 'shop.x' doesn't exist");
    let mut expected = vec![0xFF, 0x7A, 0x04, b'#'];
    expected.extend_from_slice(b"42S02Table 'shop.x' doesn't exist");
    assert_eq!(payloads(&writer)[0], expected);
}

#[test]
fn err_packet_from_protocol_error_and_long_messages_are_cut_on_a_char_boundary() {
    let mut writer = PacketWriter::new(1);
    write_error(&mut writer, CAPS, &ProtocolError::PacketTooLarge { len: 2, max: 1 }.to_mysql());
    let payload = &payloads(&writer)[0];
    assert_eq!(payload[..9], *b"\xFF\x81\x04#08S01");
    let mut writer = PacketWriter::new(1);
    write_err(&mut writer, CAPS, 1064, "42000", &"é".repeat(400));
    let payload = &payloads(&writer)[0];
    assert_eq!(payload.len(), 9 + MAX_ERROR_MESSAGE_LEN);
    assert!(std::str::from_utf8(&payload[9..]).is_ok());
}

#[test]
fn eof_packet() {
    let mut writer = PacketWriter::new(1);
    write_eof(&mut writer, CAPS, 1, SERVER_STATUS_AUTOCOMMIT);
    assert_eq!(writer.buf, [5, 0, 0, 1, 0xFE, 1, 0, 2, 0]);
}

#[test]
fn column_definition_bytes() {
    let mut writer = PacketWriter::new(2);
    write_column_definition(&mut writer, &int_column("id"));
    let mut expected = b"\x03def\x04shop\x01t\x05items\x02id\x02id\x0c".to_vec();
    expected.extend_from_slice(&[63, 0, 11, 0, 0, 0, 3, 0x01, 0x80, 0, 0, 0]);
    assert_eq!(payloads(&writer)[0], expected);

    let mut writer = PacketWriter::new(2);
    write_field_list_column(&mut writer, &int_column("id"));
    expected.push(0xFB);
    assert_eq!(payloads(&writer)[0], expected);
}

#[test]
fn text_row_with_null() {
    let mut writer = PacketWriter::new(3);
    write_text_row(&mut writer, &[Some(b"1"), None, Some(b"")]);
    assert_eq!(writer.buf, [4, 0, 0, 3, 1, b'1', 0xFB, 0]);
}

#[test]
fn text_result_set_with_eof_packets() {
    let mut writer = PacketWriter::new(1);
    let rows: Vec<Vec<Option<&[u8]>>> = vec![vec![Some(b"1")], vec![None]];
    write_text_result_set(&mut writer, CAPS, &[int_column("id")], &rows, SERVER_STATUS_AUTOCOMMIT, 0).unwrap();
    let packets = frames(&writer.buf);
    let seqs: Vec<u8> = packets.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
    assert_eq!(packets[0].1, [1]);
    assert_eq!(packets[2].1, [0xFE, 0, 0, 2, 0], "EOF after the definitions");
    assert_eq!(packets[3].1, [1, b'1']);
    assert_eq!(packets[4].1, [0xFB]);
    assert_eq!(packets[5].1, [0xFE, 0, 0, 2, 0]);
}

#[test]
fn text_result_set_with_deprecate_eof_and_more_results() {
    let mut writer = PacketWriter::new(1);
    let rows: [&[Option<&[u8]>]; 1] = [&[Some(b"7")]];
    let status = SERVER_STATUS_AUTOCOMMIT | SERVER_MORE_RESULTS_EXISTS;
    write_text_result_set(&mut writer, CAPS_NO_EOF, &[int_column("id")], rows, status, 0).unwrap();
    let packets = payloads(&writer);
    assert_eq!(packets.len(), 4, "count, definition, row, terminator");
    assert_eq!(packets[3], [0xFE, 0, 0, 0x0A, 0, 0, 0]);
}

#[test]
fn result_set_rejects_rows_of_the_wrong_width() {
    let mut writer = PacketWriter::new(1);
    let rows: [&[Option<&[u8]>]; 1] = [&[None, None]];
    let result = write_text_result_set(&mut writer, CAPS, &[int_column("id")], rows, 0, 0);
    assert_eq!(result, Err(ProtocolError::ColumnCountMismatch { expected: 1, got: 2 }));
}

#[test]
fn binary_result_set() {
    let mut writer = PacketWriter::new(1);
    let rows = [vec![BinaryValue::Int(5)], vec![BinaryValue::Null]];
    write_binary_result_set(&mut writer, CAPS_NO_EOF, &[int_column("id")], &rows, 2, 0).unwrap();
    let packets = payloads(&writer);
    assert_eq!(packets.len(), 5);
    assert_eq!(packets[2], [0x00, 0x00, 5, 0, 0, 0]);
    assert_eq!(packets[3], [0x00, 0b100]);
    assert_eq!(packets[4], [0xFE, 0, 0, 2, 0, 0, 0]);
}

#[test]
fn stmt_prepare_ok_with_and_without_eof() {
    let params = [int_column("?")];
    let columns = [int_column("a"), int_column("b")];
    let prepare_ok = StmtPrepareOk { stmt_id: 1, warnings: 0 };
    let mut writer = PacketWriter::new(1);
    write_stmt_prepare_ok(&mut writer, CAPS, prepare_ok, &params, &columns);
    let packets = payloads(&writer);
    assert_eq!(packets[0], [0x00, 1, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0]);
    assert_eq!(packets.len(), 1 + 1 + 1 + 2 + 1);
    assert_eq!(packets[2], [0xFE, 0, 0, 0, 0]);
    assert_eq!(packets[5], [0xFE, 0, 0, 0, 0]);

    let mut writer = PacketWriter::new(1);
    write_stmt_prepare_ok(&mut writer, CAPS_NO_EOF, prepare_ok, &params, &columns);
    assert_eq!(payloads(&writer).len(), 1 + 1 + 2);

    let mut writer = PacketWriter::new(1);
    write_stmt_prepare_ok(&mut writer, CAPS, prepare_ok, &[], &[]);
    assert_eq!(payloads(&writer).len(), 1, "no definitions, no EOFs");
}

#[test]
fn lenenc_helpers_are_reexported() {
    let mut out = Vec::new();
    write_lenenc_int(&mut out, 1000);
    assert_eq!(read_lenenc_int(&out), Ok((1000, 3)));
    assert_eq!(lenenc_int_len(1000), 3);
}
