"""The command/flag contract, as the engine reads it (args.py): which engine
command takes which flag, of which type. GENERATED from ENGINE_FLAGS in
plugins/module_utils/_lakekeeper_argv.py (the one source, where the rows are
described) by scripts/flag_contract.py: do not edit here.
tests/engine/test_flag_contract.py checks that this copy is current.
"""

COMMANDS = ("analyze", "compact", "rollback", "cleanup", "recover")
# (module option, engine flag, engine dest, type, commands, render)
ENGINE_FLAGS = (
    ("block_size_mb", "--block-size", "block_size_mb", "float", COMMANDS, "value"),
    ("compaction_ratio_threshold", "--ratio-threshold", "compaction_ratio_threshold", "float", COMMANDS, "value"),
    ("target_file_size_mb", "--target-file-size", "target_file_size_mb", "float", COMMANDS, "value"),
    ("backup_prefix", "--backup-prefix", "backup_prefix", "str", COMMANDS, "value"),
    ("older_than", "--older-than", "older_than", "str", ("cleanup", "analyze"), "value"),
    ("keep_last", "--keep-last", "keep_last", "int", ("cleanup", "analyze"), "value"),
    ("grace_period", "--grace-period", "grace_period", "str", ("cleanup", "analyze"), "value"),
    ("pin", "--pin", "pin", "str", ("cleanup",), "value"),
    ("unpin", "--unpin", "unpin", "str", ("cleanup",), "value"),
    ("run_id", "--run-id", "rollback_run", "str", ("rollback",), "value"),
    ("log_level", "--log-level", "log_level", "upper", COMMANDS, "value"),
    ("min_piece_mb", "--min-piece-mb", "min_piece_mb", "float", COMMANDS, "value"),
    ("quiet_period", "--quiet-period", "quiet_period", "str", ("compact",), "value"),
    ("parallelism", "--parallelism", "parallelism", "int", COMMANDS, "value"),
    ("deadline", "--deadline", "deadline", "str", ("compact",), "deadline"),
    ("order", "--order", "order", "lower", ("compact",), "value"),
    ("verify", "--verify", "verify", "lower", ("compact",), "value"),
    ("verify_sample", "--verify-sample", "verify_sample", "float", ("compact",), "value"),
    ("queues", "--queues", "queues", "str", ("analyze", "compact"), "mapping"),
    ("retries", "--retries", "retries", "int", ("compact",), "value"),
    ("retry_backoff", "--retry-backoff", "retry_backoff", "float", ("compact",), "value"),
    ("allow_by_name_projection", "--allow-by-name-projection", "allow_by_name_projection", "switch", ("compact",), "switch"),
    ("allow_owner_change", "--allow-owner-change", "allow_owner_change", "switch", ("compact",), "switch"),
    ("allow_replicated", "--allow-replicated", "allow_replicated", "switch", ("compact", "analyze"), "switch"),
    ("fail_on_refused", "--fail-on-refused", "fail_on_refused", "switch", COMMANDS, "switch"),
    ("lease_timeout", "--lease-timeout", "lease_timeout", "str", COMMANDS, "value"),
    ("progress_file", "--progress-file", "progress_file", "str", COMMANDS, "value"),
    ("result_uri", "--result-uri", "result_uri", "str", COMMANDS, "value"),
    ("break_lease", "--break-lease", "break_lease", "switch", ("recover",), "switch"),
    ("orphans", "--orphans", "orphans", "switch", ("cleanup",), "switch"),
    ("mode", "--mode", "mode", "lower", COMMANDS, "value"),
    ("min_input_files", "--min-input-files", "min_input_files", "int", COMMANDS, "value"),
    ("fragment_ratio", "--fragment-ratio", "fragment_ratio", "float", COMMANDS, "value"),
    ("min_target_ratio", "--min-target-ratio", "min_target_ratio", "float", COMMANDS, "value"),
    ("max_file_size_mb", "--max-file-size-mb", "max_file_size_mb", "float", ("analyze", "compact"), "value"),
    ("where", "--where", "where", "str", ("analyze", "compact", "rollback"), "joined"),
    ("history", "--history", "history", "int", ("analyze",), "value"),
    ("sort_by", "--sort-by", "sort_by", "str", ("compact",), "rewrite"),
    ("dedupe.keys", "--dedupe-keys", "dedupe_keys", "str", ("compact", "analyze"), "rewrite"),
    ("dedupe.order_by", "--dedupe-order-by", "dedupe_order_by", "str", ("compact", "analyze"), "rewrite"),
    ("dedupe.delete_marker", "--dedupe-delete-marker", "dedupe_delete_marker", "str", ("compact", "analyze"), "rewrite"),
    ("dedupe.delete_marker_value", "--dedupe-delete-value", "dedupe_delete_value", "str", ("compact", "analyze"), "rewrite"),
    ("dedupe.trigger_ratio", "--dedupe-trigger-ratio", "dedupe_trigger_ratio", "float", ("compact", "analyze"), "rewrite"),
    ("merge_from", "--merge-from", "merge_from", "str", ("compact",), "rewrite"),
    ("tiering.older_than", "--tier-older-than", "tier_older_than", "str", ("compact",), "tiering"),
    ("tiering.storage_policy", "--tier-storage-policy", "tier_storage_policy", "str", ("compact",), "tiering"),
    ("tiering.erasure_coding_policy", "--tier-ec-policy", "tier_erasure_coding_policy", "str", ("compact",), "tiering"),
)
