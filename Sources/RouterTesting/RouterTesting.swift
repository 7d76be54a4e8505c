// RouterTesting is the router-level test kit (recording channels, a PostgreSQL server for tests); it
// re-exports the pure kit a channel author needs, ChannelTesting (ChannelConformance,
// ScriptedTransport, TestConfig, ManualClock, InMemoryChannelState, RecordingLogSink), so
// `import RouterTesting` keeps giving both.
@_exported import ChannelTesting
