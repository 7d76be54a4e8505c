import ChannelAPI

/// A position in YAML source text: the config file position (``ChannelAPI/ConfigMark``), 1-based line
/// and column (libyaml's 0-based marks are converted; columns are counted in characters as libyaml
/// counts them). Its description is `"line:column"`, for example `"3:7"`.
public typealias YAMLMark = ConfigMark
