package web

// HistoryMessages is how many messages the chat page's newest page holds.
const HistoryMessages = historyMessages
