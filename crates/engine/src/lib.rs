//! The engine layer: control protocol, responder, driver and event-driven workers.
