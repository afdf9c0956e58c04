//! The capacity planner (pure code, no sockets).
