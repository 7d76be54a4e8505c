import ChannelAPI

/// Herald's notification (not Foundation's `Notification`), for every file of this module.
typealias Notification = ChannelAPI.Notification
