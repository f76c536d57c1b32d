package sqlstore

// SearchBatch and SearchPendingQuery are BackfillSearch's, for its tests.
const (
	SearchBatch        = searchBatch
	SearchPendingQuery = searchPendingQuery
)
