//! Values by percentile key (`"99.9"`), in the order asked for, written
//! as a JSON object.

use serde::Serialize;

/// Values by percentile key, in the order asked for; a JSON object.
#[derive(Clone, Debug, PartialEq)]
pub struct Keyed<T>(pub Vec<(String, T)>);

impl<T> Keyed<T> {
    /// The value for a percentile key.
    pub fn get(&self, key: &str) -> Option<&T> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl<T: Serialize> Serialize for Keyed<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}
