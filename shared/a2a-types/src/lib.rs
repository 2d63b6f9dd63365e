//! A2A 1.0 wire types.
