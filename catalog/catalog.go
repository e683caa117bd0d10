// Package catalog names the metrics winobs's own components export, in one
// place for the code that exports them and for the dashboards, rules and
// tests that query them, so gen links none of the exporting code.
package catalog

// eventlog-shipper metrics (winobs_shipper_*).
const (
	ShipperEventsRead     = "winobs_shipper_events_read_total"
	ShipperEventsSent     = "winobs_shipper_events_sent_total"
	ShipperEventsDropped  = "winobs_shipper_events_dropped_total"
	ShipperBytesSent      = "winobs_shipper_bytes_sent_total"
	ShipperPushDuration   = "winobs_shipper_push_duration_seconds"
	ShipperPushErrors     = "winobs_shipper_push_errors_total"
	ShipperPushRetries    = "winobs_shipper_push_retries_total"
	ShipperCheckpointTime = "winobs_shipper_checkpoint_timestamp_seconds"
	ShipperCheckpointID   = "winobs_shipper_checkpoint_record_id"
	ShipperPending        = "winobs_shipper_pending_events"
	ShipperRecordLag      = "winobs_shipper_record_lag"
	ShipperResubscribes   = "winobs_shipper_resubscribes_total"
	ShipperRenderErrors   = "winobs_shipper_render_errors_total"
	ShipperInFlightBytes  = "winobs_shipper_in_flight_bytes"
	ShipperTruncated      = "winobs_shipper_events_truncated_total"
	ShipperRestamped      = "winobs_shipper_events_restamped_total"
	ShipperDumpReopens    = "winobs_shipper_dump_reopens_total"
)

// ShipperMetrics are all the eventlog-shipper's metrics (package shipper's
// tests hold its registry to this list).
var ShipperMetrics = []string{ShipperEventsRead, ShipperEventsSent, ShipperEventsDropped, ShipperBytesSent, ShipperPushDuration,
	ShipperPushErrors, ShipperPushRetries, ShipperCheckpointTime, ShipperCheckpointID, ShipperPending, ShipperRecordLag,
	ShipperResubscribes, ShipperRenderErrors, ShipperInFlightBytes, ShipperTruncated, ShipperRestamped, ShipperDumpReopens}

// ShipperDropReasons are the reasons the eventlog-shipper gives up on an
// event; each is exported from start (at 0) for every channel.
var ShipperDropReasons = []string{"too_large", "too_old", "older_than_max_age", "malformed_xml", "corrupt_checkpoint",
	"too_new", "too_far_behind", "stream_refused", "rejected_400", "rejected_405", "rejected_422"}
