// Package wineventlog implements subscribe.API with wevtapi.dll: pull
// subscriptions, EvtRender with buffers sized by a probing call,
// EvtFormatMessage through cached publisher metadata, and bookmarks. It is
// only the Windows calls; the subscription logic is in package subscribe.
//
// Only abi.go (the contract with wevtapi.dll) builds on every OS, so that a
// test on Linux can hold it to mingw-w64's headers.
package wineventlog
