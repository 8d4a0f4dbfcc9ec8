package main

import "regexp"

// Target is a file of the server package and the part of it that is mutated: the functions whose
// name `functions` matches (every function when nil), and within them, when `region` is set, only
// the if, for and range statements and assignments whose header (condition, range expression or
// the assignment itself) `region` matches, with everything inside them.
type Target struct {
	path      string
	functions *regexp.Regexp
	exclude   *regexp.Regexp
	region    *regexp.Regexp
}

var targets = []Target{
	// The subject transform, whole.
	{path: "server/subject_transform.go"},
	// Subject validity and matching (the sublist's own insert, remove and cache are left alone).
	{
		path:      "server/sublist.go",
		functions: regexp.MustCompile(`(?i)valid|match|collide|literal|subset|token`),
		exclude:   regexp.MustCompile(`(?i)reverse|forany|cache|Bytes$`),
	},
	// Account subject mappings: install, weighted lists, removal, selection on publish, JWT claims.
	{path: "server/accounts.go", functions: regexp.MustCompile(`(?i)mapping|selectMapped`)},
	// Stream subject transforms and RePublish, wherever stream.go handles them.
	{
		path:   "server/stream.go",
		region: regexp.MustCompile(`\b(SubjectTransforms?|RePublish|rePublish|itr|tr)\b`),
	},
}
