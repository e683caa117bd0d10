package contract

// The metrics winobs's own components export, named here for the code that
// exports them and for the dashboards, rules, doctor and tests that query
// them, so gen links none of the exporting code.

// ShipperName names every eventlog-shipper object (its DaemonSet, so the
// pods kube-state-metrics reports as created_by_name), for the code that
// renders them and doctor, which looks for them.
const ShipperName = "winobs-eventlog-shipper"

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
	ShipperPresumed       = "winobs_shipper_events_presumed_stored_total"
	ShipperLanes          = "winobs_shipper_lanes"
	ShipperStateIgnored   = "winobs_shipper_state_files_ignored_total"
	ShipperSourceUp       = "winobs_shipper_source_up"
)

// ShipperMetrics are all the eventlog-shipper's metrics (package shipper's
// tests hold its registry to this list).
var ShipperMetrics = []string{ShipperEventsRead, ShipperEventsSent, ShipperEventsDropped, ShipperBytesSent, ShipperPushDuration,
	ShipperPushErrors, ShipperPushRetries, ShipperCheckpointTime, ShipperCheckpointID, ShipperPending, ShipperRecordLag,
	ShipperResubscribes, ShipperRenderErrors, ShipperInFlightBytes, ShipperTruncated, ShipperRestamped, ShipperDumpReopens, ShipperPresumed, ShipperLanes, ShipperStateIgnored, ShipperSourceUp}

// The labels of the eventlog-shipper's metrics besides the channel: why an
// event was dropped or re-stamped, and a failed push's HTTP status.
const (
	LabelReason = "reason"
	LabelStatus = "status"
)

// PushDisallowedMetadata is the reason of push_errors_total for Loki's
// refusal of structured metadata (limits_config.allow_structured_metadata
// false), Loki's own reason for those entries in
// loki_discarded_samples_total; other push errors carry no reason.
const PushDisallowedMetadata = "disallowed_structured_metadata"

// Reasons the eventlog-shipper gives up on an event (reason of
// events_dropped_total) or sends it with another timestamp than TimeCreated
// (reason of events_restamped_total).
const (
	DropTooLarge      = "too_large"          // over maxEventBytes, or Loki's line limit after repair
	DropTooOld        = "too_old"            // older than Loki takes (tooOld: drop, or after repair)
	DropOlderThanMax  = "older_than_max_age" // older than the shipper's maxAge
	DropMalformed     = "malformed_xml"      // not well-formed XML
	DropCorrupt       = "corrupt_checkpoint" // skipped by onCorruptCheckpoint
	DropTooNew        = "too_new"            // ahead of Loki's grace after repair
	DropTooFarBehind  = "too_far_behind"     // behind its stream after repair
	DropStreamRefused = "stream_refused"     // Loki refused the stream's labels
	// DropUnconfirmed: Loki answered a 400 that could not be attributed
	// entry by entry, and no later 204 confirmed the entry.
	DropUnconfirmed = "rejected_400"
	// DropRejected: Loki refused the whole request (a 422) in its own
	// words, or it could not be made at all.
	DropRejected = "rejected_422"

	RestampTooOld       = "too_old"        // older than limits.maxEntryAge
	RestampTooFarBehind = "too_far_behind" // behind its stream's newest, or the oldest time Loki named
	RestampTooNew       = "too_new"        // beyond limits.maxFuture
)

// ShipperDropReasons are the reasons the eventlog-shipper gives up on an
// event; each is exported from start (at 0) for every channel.
var ShipperDropReasons = []string{DropTooLarge, DropTooOld, DropOlderThanMax, DropMalformed, DropCorrupt,
	DropTooNew, DropTooFarBehind, DropStreamRefused, DropUnconfirmed, DropRejected}

// ShipperRestampReasons are those of events_restamped_total, exported from
// start for every channel.
var ShipperRestampReasons = []string{RestampTooOld, RestampTooFarBehind, RestampTooNew}
