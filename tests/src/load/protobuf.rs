//! Kubernetes protobuf watch streams as a load client reads them: frames (a 4-byte big-endian
//! length, then a `WatchEvent`) counted as bytes arrive, kept only for sampled watchers, and
//! the send time read from a kept frame's ConfigMap.

use k8s_pb::api::core::v1::ConfigMap;
use k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;

use super::resources::SENT_ANNOTATION;

/// The media type a protobuf client asks for.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// Splits a watch stream into frames as its bytes arrive, in any chunking.
#[derive(Debug, Default)]
pub struct FrameReader {
    /// Keep each frame's bytes (a sampled watcher), instead of only counting them.
    keep: bool,
    /// The length prefix read so far.
    prefix: Vec<u8>,
    /// Bytes of the current frame still to come.
    remaining: usize,
    /// The current frame's bytes, when kept.
    frame: Vec<u8>,
}

impl FrameReader {
    /// A reader that keeps frames (`keep`) or only counts them.
    pub fn new(keep: bool) -> Self {
        Self {
            keep,
            ..Self::default()
        }
    }

    /// Reads `data`; answers how many frames it completed, and each completed frame's event
    /// (without its prefix) when frames are kept.
    pub fn feed(&mut self, mut data: &[u8]) -> (u64, Vec<Vec<u8>>) {
        let (mut count, mut frames) = (0, Vec::new());
        while !data.is_empty() {
            if self.remaining == 0 {
                let take = (4 - self.prefix.len()).min(data.len());
                self.prefix.extend_from_slice(&data[..take]);
                data = &data[take..];
                if self.prefix.len() < 4 {
                    break;
                }
                let len = u32::from_be_bytes([
                    self.prefix[0],
                    self.prefix[1],
                    self.prefix[2],
                    self.prefix[3],
                ]);
                self.prefix.clear();
                self.remaining = len as usize;
                if self.remaining == 0 {
                    count += 1;
                    continue;
                }
            }
            let take = self.remaining.min(data.len());
            if self.keep {
                self.frame.extend_from_slice(&data[..take]);
            }
            self.remaining -= take;
            data = &data[take..];
            if self.remaining == 0 {
                count += 1;
                if self.keep {
                    frames.push(std::mem::take(&mut self.frame));
                }
            }
        }
        (count, frames)
    }
}

/// The Unix-nanosecond send time in a watch event's ConfigMap ([`SENT_ANNOTATION`]), decoded
/// as a protobuf client decodes it; `None` for other events (a bookmark) or objects.
pub fn sent_nanos(event: &[u8]) -> Option<u64> {
    let event = WatchEvent::decode(event).ok()?;
    let raw = event.object?.raw?;
    let unknown = Unknown::decode(raw.strip_prefix(b"k8s\0")?).ok()?;
    let config_map = ConfigMap::decode(unknown.raw?.as_slice()).ok()?;
    config_map
        .metadata?
        .annotations
        .get(SENT_ANNOTATION)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use k8s_pb::apimachinery::pkg::runtime::{RawExtension, TypeMeta};

    fn frame(sent: u64) -> Vec<u8> {
        let mut meta = ObjectMeta::default();
        meta.annotations
            .insert(SENT_ANNOTATION.to_owned(), sent.to_string());
        let cm = ConfigMap {
            metadata: Some(meta),
            ..Default::default()
        };
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some("v1".into()),
                kind: Some("ConfigMap".into()),
            }),
            raw: Some(cm.encode_to_vec()),
            ..Default::default()
        };
        let mut raw = b"k8s\0".to_vec();
        raw.extend(unknown.encode_to_vec());
        let event = WatchEvent {
            r#type: Some("MODIFIED".into()),
            object: Some(RawExtension { raw: Some(raw) }),
        };
        let body = event.encode_to_vec();
        let mut out = (body.len() as u32).to_be_bytes().to_vec();
        out.extend(body);
        out
    }

    #[test]
    fn frames_are_found_in_any_chunking() {
        let stream: Vec<u8> = [frame(5), frame(7), frame(9)].concat();
        for chunk in [1, 3, 4, 5, 100, stream.len()] {
            let (mut kept, mut counted) = (FrameReader::new(true), FrameReader::new(false));
            let (mut sent, mut total) = (Vec::new(), 0);
            for piece in stream.chunks(chunk) {
                let (n, frames) = kept.feed(piece);
                assert_eq!(counted.feed(piece).0, n);
                total += n;
                sent.extend(frames.iter().filter_map(|f| sent_nanos(f)));
            }
            assert_eq!(
                (total, sent.clone()),
                (3, vec![5, 7, 9]),
                "chunks of {chunk}"
            );
        }
    }
}
