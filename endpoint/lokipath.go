package endpoint

import (
	"fmt"
	"strings"

	"github.com/winobs/winobs/conffile"
)

// LokiPushPath is Loki's push API under its base URL: what the agents post
// to.
const LokiPushPath = "/loki/api/v1/push"

// LokiPushURL is the push endpoint for raw, which is either Loki's base URL
// (https://loki.example.org, or a gateway's prefix such as
// https://gw.example.org/logs) or already the push endpoint: users copy
// either, and doctor reads from the base. Another of Loki's API paths is an
// error saying which two forms are taken. raw must have passed ParseURL.
func LokiPushURL(raw string) (string, error) {
	u, err := ParseURL(raw)
	if err != nil {
		return "", err
	}
	switch {
	case strings.HasSuffix(u.Path, LokiPushPath):
		return raw, nil
	case strings.Contains(u.Path, "/loki/api/"):
		return "", fmt.Errorf("is another of Loki's API paths (%s): give Loki's base URL, or its push endpoint ending in %s", conffile.Excerpt(u.Path), LokiPushPath)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + LokiPushPath
	u.RawPath = ""
	return u.String(), nil
}

// LokiBaseURL is Loki's base URL for raw, a base URL or the push endpoint
// (the query string dropped with it): doctor takes either.
func LokiBaseURL(raw string) string {
	if before, _, ok := strings.Cut(raw, "?"); ok && strings.HasSuffix(before, LokiPushPath) {
		raw = before
	}
	return strings.TrimSuffix(raw, LokiPushPath)
}
