//! Packet framing: the layer below every MySQL message.
//!
//! On the wire each frame is a 4-byte header, `int<3>` payload length (little-endian) and
//! `int<1>` sequence id, followed by the payload (`PACKET_HEADER_LEN = 3 + 1`). A frame holds
//! at most `MAX_PAYLOAD_LEN` (0xFF_FFFF) bytes; a longer logical payload is sent as frames of
//! exactly `MAX_PAYLOAD_LEN` bytes followed by one shorter frame, which is empty when the
//! payload is an exact multiple of `MAX_PAYLOAD_LEN`. The sequence id grows by one per frame
//! (wrapping 255 -> 0) and restarts at 0 with every new command from the client.
//!
//! Invariants:
//! - `PacketDecoder` yields only complete logical payloads, never more than
//!   `max_payload_len` bytes, and fails as soon as the frame headers seen so far add up to
//!   more, before the body has arrived, so an attacker cannot make it buffer a gigabyte.
//! - Every frame's sequence id is checked against `expected_seq`; after a payload is taken,
//!   `expected_seq` is the id the next frame must carry. The connection loop resets it to 0
//!   before reading each new command (`set_expected_seq(0)`).
//! - `PacketWriter` appends frames to one buffer so a whole reply (result set and all) goes
//!   out in one write; its `seq` is the id of the next frame it writes.
//!
//! Flow: socket bytes -> `PacketDecoder::feed` -> `next_packet` -> `command::parse_command` /
//! `handshake::parse_client_hello`; replies: `response::*` -> `PacketWriter` -> socket.

use crate::error::ProtocolError;

/// Bytes of a frame header: `int<3>` length + `int<1>` sequence id.
pub const PACKET_HEADER_LEN: usize = 3 + 1;
/// The largest payload one frame carries; a frame this long is continued by the next one.
pub const MAX_PAYLOAD_LEN: usize = 0xFF_FFFF;
/// MySQL 8's default `max_allowed_packet`: 64 MiB.
pub const DEFAULT_MAX_ALLOWED_PACKET: usize = 64 * 1024 * 1024;
/// MySQL's upper bound for `max_allowed_packet`: 1 GiB.
pub const MAX_ALLOWED_PACKET_LIMIT: usize = 1024 * 1024 * 1024;
/// Consumed bytes at the front of the decoder buffer are dropped once they exceed this and
/// half the buffer, so compaction copies rarely.
const COMPACT_THRESHOLD_BYTES: usize = 64 * 1024;

/// Turns a stream of bytes into logical payloads. Does no I/O: the caller feeds it.
#[derive(Debug)]
pub struct PacketDecoder {
    buffer: Vec<u8>,
    /// Index of the first byte in `buffer` not yet returned as part of a payload.
    consumed: usize,
    expected_seq: u8,
    max_payload_len: usize,
}

impl PacketDecoder {
    /// A decoder that accepts logical payloads up to `max_payload_len` bytes and expects the
    /// first frame to carry sequence id 0.
    ///
    /// REQUIRES: `max_payload_len <= MAX_ALLOWED_PACKET_LIMIT`.
    #[must_use]
    pub fn new(max_payload_len: usize) -> Self {
        assert!(max_payload_len <= MAX_ALLOWED_PACKET_LIMIT, "max_payload_len over 1 GiB");
        Self { buffer: Vec::new(), consumed: 0, expected_seq: 0, max_payload_len }
    }

    /// Appends bytes read from the socket.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.compact();
        self.buffer.extend_from_slice(bytes);
    }

    /// Bytes fed but not yet returned in a payload.
    #[must_use]
    pub fn buffered_len(&self) -> usize {
        self.buffer.len() - self.consumed
    }

    /// The sequence id the next frame must carry.
    #[must_use]
    pub fn expected_seq(&self) -> u8 {
        self.expected_seq
    }

    /// Sets the sequence id the next frame must carry: 0 before each command, or the
    /// writer's `seq` after the server spoke during authentication.
    pub fn set_expected_seq(&mut self, seq: u8) {
        self.expected_seq = seq;
    }

    /// Changes the payload limit (e.g. after `SET GLOBAL max_allowed_packet`).
    ///
    /// REQUIRES: `max_payload_len <= MAX_ALLOWED_PACKET_LIMIT`.
    pub fn set_max_payload_len(&mut self, max_payload_len: usize) {
        assert!(max_payload_len <= MAX_ALLOWED_PACKET_LIMIT, "max_payload_len over 1 GiB");
        self.max_payload_len = max_payload_len;
    }

    /// The next complete logical payload and the sequence id of its first frame, or `None`
    /// when more bytes are needed. Errors (`PacketTooLarge`, `SequenceMismatch`) leave the
    /// stream unusable: answer with an ERR packet and close the connection. After
    /// `PacketTooLarge`, `expected_seq` is the id that ERR carries (the one after the frame
    /// that went over the limit).
    pub fn next_packet(&mut self) -> Result<Option<(u8, Vec<u8>)>, ProtocolError> {
        let mut frame_start = self.consumed;
        let mut seq = self.expected_seq;
        let mut payload_len_total = 0usize;
        let mut frame_count = 0usize;
        // Pass 1: walk frame headers until the last frame is complete.
        let packet_end = loop {
            let Some(header) = self.buffer.get(frame_start..frame_start + PACKET_HEADER_LEN) else {
                return Ok(None);
            };
            let frame_len = usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
            if header[3] != seq {
                return Err(ProtocolError::SequenceMismatch { expected: seq, got: header[3] });
            }
            payload_len_total += frame_len;
            if payload_len_total > self.max_payload_len {
                let max = self.max_payload_len;
                // The ERR that answers it follows this frame.
                self.expected_seq = seq.wrapping_add(1);
                return Err(ProtocolError::PacketTooLarge { len: payload_len_total, max });
            }
            let frame_end = frame_start + PACKET_HEADER_LEN + frame_len;
            if frame_end > self.buffer.len() {
                return Ok(None);
            }
            frame_count += 1;
            seq = seq.wrapping_add(1);
            frame_start = frame_end;
            if frame_len < MAX_PAYLOAD_LEN {
                break frame_end;
            }
        };
        // Pass 2: copy the payload out, skipping the headers.
        let first_seq = self.expected_seq;
        let mut payload = Vec::with_capacity(payload_len_total);
        let mut position = self.consumed;
        for _ in 0..frame_count {
            let header = &self.buffer[position..position + PACKET_HEADER_LEN];
            let frame_len = usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
            let body_start = position + PACKET_HEADER_LEN;
            payload.extend_from_slice(&self.buffer[body_start..body_start + frame_len]);
            position = body_start + frame_len;
        }
        debug_assert_eq!(position, packet_end);
        debug_assert_eq!(payload.len(), payload_len_total);
        self.consumed = packet_end;
        self.expected_seq = seq;
        Ok(Some((first_seq, payload)))
    }

    fn compact(&mut self) {
        if self.consumed == self.buffer.len() {
            self.buffer.clear();
            self.consumed = 0;
        } else if self.consumed > COMPACT_THRESHOLD_BYTES && self.consumed > self.buffer.len() / 2 {
            self.buffer.drain(..self.consumed);
            self.consumed = 0;
        }
    }
}

/// Appends framed packets to one output buffer. `seq` is the id of the next frame.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PacketWriter {
    pub seq: u8,
    pub buf: Vec<u8>,
}

impl PacketWriter {
    /// A writer whose first frame carries `seq` (1 for the first reply to a command).
    #[must_use]
    pub fn new(seq: u8) -> Self {
        Self { seq, buf: Vec::new() }
    }

    /// Frames `payload`, splitting it into `MAX_PAYLOAD_LEN` frames plus a shorter (possibly
    /// empty) last frame.
    pub fn write_packet(&mut self, payload: &[u8]) {
        self.buf.reserve(payload.len() + PACKET_HEADER_LEN * (1 + payload.len() / MAX_PAYLOAD_LEN));
        let mut unsent = payload;
        loop {
            let frame_len = unsent.len().min(MAX_PAYLOAD_LEN);
            self.push_header(frame_len);
            self.buf.extend_from_slice(&unsent[..frame_len]);
            unsent = &unsent[frame_len..];
            if frame_len < MAX_PAYLOAD_LEN {
                break;
            }
        }
        debug_assert!(unsent.is_empty());
    }

    /// Frames the payload that `build` appends to the vector it is given (which is the output
    /// buffer itself, so small packets are written without an intermediate copy).
    ///
    /// REQUIRES: `build` only appends.
    pub fn write_packet_with(&mut self, build: impl FnOnce(&mut Vec<u8>)) {
        let header_start = self.buf.len();
        self.buf.extend_from_slice(&[0; PACKET_HEADER_LEN]);
        build(&mut self.buf);
        assert!(self.buf.len() >= header_start + PACKET_HEADER_LEN, "build truncated the buffer");
        let payload_len = self.buf.len() - header_start - PACKET_HEADER_LEN;
        if payload_len < MAX_PAYLOAD_LEN {
            let len_bytes = (payload_len as u32).to_le_bytes();
            self.buf[header_start..header_start + 3].copy_from_slice(&len_bytes[..3]);
            self.buf[header_start + 3] = self.seq;
            self.seq = self.seq.wrapping_add(1);
        } else {
            // Rare: a payload of 16 MiB or more must be split; re-frame it.
            let payload = self.buf.split_off(header_start + PACKET_HEADER_LEN);
            self.buf.truncate(header_start);
            self.write_packet(&payload);
        }
    }

    /// Takes the framed bytes for one write to the socket; `seq` is kept.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    fn push_header(&mut self, frame_len: usize) {
        debug_assert!(frame_len <= MAX_PAYLOAD_LEN);
        let len_bytes = (frame_len as u32).to_le_bytes();
        self.buf.extend_from_slice(&len_bytes[..3]);
        self.buf.push(self.seq);
        self.seq = self.seq.wrapping_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut writer = PacketWriter::new(seq);
        writer.write_packet(payload);
        writer.buf
    }

    #[test]
    fn small_packet_has_a_four_byte_header() {
        assert_eq!(frame(0, b"\x03SELECT 1"), b"\x09\x00\x00\x00\x03SELECT 1");
        assert_eq!(frame(7, b""), [0, 0, 0, 7]);
    }

    #[test]
    fn decoder_yields_a_packet_fed_one_byte_at_a_time() {
        let bytes = frame(0, b"\x0e");
        let mut decoder = PacketDecoder::new(DEFAULT_MAX_ALLOWED_PACKET);
        for byte in &bytes[..bytes.len() - 1] {
            decoder.feed(&[*byte]);
            assert_eq!(decoder.next_packet(), Ok(None));
        }
        decoder.feed(&bytes[bytes.len() - 1..]);
        assert_eq!(decoder.next_packet(), Ok(Some((0, vec![0x0e]))));
        assert_eq!(decoder.expected_seq(), 1);
        assert_eq!(decoder.buffered_len(), 0);
    }

    #[test]
    fn pipelined_commands_each_restart_at_seq_zero() {
        let mut bytes = frame(0, b"\x03SELECT 1");
        bytes.extend(frame(0, b"\x03SELECT 2"));
        let mut decoder = PacketDecoder::new(1024);
        decoder.feed(&bytes);
        assert_eq!(decoder.next_packet(), Ok(Some((0, b"\x03SELECT 1".to_vec()))));
        decoder.set_expected_seq(0);
        assert_eq!(decoder.next_packet(), Ok(Some((0, b"\x03SELECT 2".to_vec()))));
        assert_eq!(decoder.next_packet(), Ok(None));
    }

    #[test]
    fn payload_of_16_mib_plus_one_is_split_into_two_frames_and_rejoined() {
        let payload: Vec<u8> = (0..MAX_PAYLOAD_LEN + 1).map(|i| (i % 251) as u8).collect();
        let bytes = frame(0, &payload);
        assert_eq!(bytes.len(), payload.len() + 2 * PACKET_HEADER_LEN);
        assert_eq!(&bytes[..4], [0xFF, 0xFF, 0xFF, 0]);
        let second = PACKET_HEADER_LEN + MAX_PAYLOAD_LEN;
        assert_eq!(&bytes[second..second + 4], [1, 0, 0, 1]);

        let mut decoder = PacketDecoder::new(DEFAULT_MAX_ALLOWED_PACKET);
        decoder.feed(&bytes[..second + 2]);
        assert_eq!(decoder.next_packet(), Ok(None), "second header incomplete");
        decoder.feed(&bytes[second + 2..]);
        let (seq, rejoined) = decoder.next_packet().unwrap().unwrap();
        assert_eq!(seq, 0);
        assert!(rejoined == payload);
        assert_eq!(decoder.expected_seq(), 2);
    }

    #[test]
    fn exact_max_payload_is_followed_by_an_empty_trailer() {
        let payload = vec![0xAB; MAX_PAYLOAD_LEN];
        let bytes = frame(3, &payload);
        assert_eq!(bytes.len(), MAX_PAYLOAD_LEN + 2 * PACKET_HEADER_LEN);
        assert_eq!(&bytes[bytes.len() - 4..], [0, 0, 0, 4], "empty frame with seq 4");

        let mut decoder = PacketDecoder::new(DEFAULT_MAX_ALLOWED_PACKET);
        decoder.set_expected_seq(3);
        decoder.feed(&bytes[..bytes.len() - 4]);
        assert_eq!(decoder.next_packet(), Ok(None), "a full frame is never the last one");
        decoder.feed(&bytes[bytes.len() - 4..]);
        let (seq, rejoined) = decoder.next_packet().unwrap().unwrap();
        assert_eq!((seq, rejoined.len()), (3, MAX_PAYLOAD_LEN));
        assert_eq!(decoder.expected_seq(), 5);
    }

    #[test]
    fn write_packet_with_matches_write_packet_for_small_and_huge_payloads() {
        for len in [0, 1, 1000, MAX_PAYLOAD_LEN - 1, MAX_PAYLOAD_LEN, MAX_PAYLOAD_LEN + 5] {
            let payload = vec![7u8; len];
            let mut writer = PacketWriter::new(9);
            writer.write_packet_with(|out| out.extend_from_slice(&payload));
            let expected = frame(9, &payload);
            assert!(writer.buf == expected, "length {len}");
        }
    }

    #[test]
    fn sequence_ids_wrap_from_255_to_0() {
        let mut writer = PacketWriter::new(255);
        writer.write_packet(b"a");
        writer.write_packet(b"b");
        assert_eq!(writer.seq, 1);
        assert_eq!(writer.buf, [1, 0, 0, 255, b'a', 1, 0, 0, 0, b'b']);

        let mut decoder = PacketDecoder::new(16);
        decoder.set_expected_seq(255);
        decoder.feed(&writer.take());
        assert_eq!(decoder.next_packet(), Ok(Some((255, b"a".to_vec()))));
        assert_eq!(decoder.next_packet(), Ok(Some((0, b"b".to_vec()))));
        assert!(writer.is_empty());
    }

    #[test]
    fn out_of_order_sequence_id_is_a_typed_error() {
        let mut decoder = PacketDecoder::new(16);
        decoder.feed(&frame(2, b"x"));
        assert_eq!(decoder.next_packet(), Err(ProtocolError::SequenceMismatch { expected: 0, got: 2 }));
    }

    #[test]
    fn oversized_packet_is_rejected_from_its_header_alone() {
        let mut decoder = PacketDecoder::new(10);
        decoder.feed(&[11, 0, 0, 0]);
        assert_eq!(decoder.next_packet(), Err(ProtocolError::PacketTooLarge { len: 11, max: 10 }));
        assert_eq!(decoder.expected_seq(), 1, "the ERR answers the frame that went over");
    }

    /// Regression: a packet of several frames that goes over the limit in a later frame was
    /// answered with the sequence id of the first, and the client reported packets out of
    /// order instead of 1153.
    #[test]
    fn the_reply_to_an_oversized_multi_frame_packet_follows_its_last_frame() {
        let mut decoder = PacketDecoder::new(MAX_PAYLOAD_LEN + 10);
        let mut bytes = vec![0xFF, 0xFF, 0xFF, 0];
        bytes.extend(std::iter::repeat_n(b'x', MAX_PAYLOAD_LEN));
        bytes.extend_from_slice(&[20, 0, 0, 1]);
        decoder.feed(&bytes);
        assert!(matches!(decoder.next_packet(), Err(ProtocolError::PacketTooLarge { .. })));
        assert_eq!(decoder.expected_seq(), 2);
    }

    #[test]
    fn payload_exactly_at_the_limit_is_accepted() {
        let mut decoder = PacketDecoder::new(10);
        decoder.feed(&frame(0, &[1; 10]));
        assert_eq!(decoder.next_packet(), Ok(Some((0, vec![1; 10]))));
    }

    #[test]
    fn multi_frame_packet_over_the_limit_is_rejected_once_the_sum_exceeds_it() {
        let mut decoder = PacketDecoder::new(MAX_PAYLOAD_LEN + 3);
        decoder.feed(&[0xFF, 0xFF, 0xFF, 0]);
        decoder.feed(&vec![0; MAX_PAYLOAD_LEN]);
        decoder.feed(&[4, 0, 0, 1]);
        assert_eq!(decoder.next_packet(), Err(ProtocolError::PacketTooLarge { len: MAX_PAYLOAD_LEN + 4, max: MAX_PAYLOAD_LEN + 3 }));
    }
}
