//! The registry: one generic store per served resource, driving its strategy around storage.

pub mod strategy;
