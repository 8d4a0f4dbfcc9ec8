"""`suites.surface`: the mapping surface read from a release's Go source, on snippets in the shapes of
real releases (2.8.4's accounts.go, 2.9.25-2.15.3's regular expressions, 2.14.10's account-scoped
functions, stream.go's structs, opts.go's switches), and the `surface` command on made-up sources."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import nats_conformance.suites.surface
from nats_conformance import main
from nats_conformance.suites.surface import (
    Surface,
    diff,
    error_codes_in,
    functions_in,
    struct_keys_in,
    surface_in,
    switch_keys_in,
    unmodelled,
)

GO_2_8 = r"""
var commaSeparatorRegEx = regexp.MustCompile(`,\s*`)
var partitionMappingFunctionRegEx = regexp.MustCompile(`{{\s*partition\s*\((.*)\)\s*}}`)
var wildcardMappingFunctionRegEx = regexp.MustCompile(`{{\s*wildcard\s*\((.*)\)\s*}}`)
"""
GO_2_12 = r"""
var (
	commaSeparatorRegEx                = regexp.MustCompile(`,\s*`)
	partitionMappingFunctionRegEx      = regexp.MustCompile(`{{\s*[pP]artition\s*\((.*)\)\s*}}`)
	splitFromLeftMappingFunctionRegEx  = regexp.MustCompile(`{{\s*[sS]plit[fF]rom[lL]eft\s*\((.*)\)\s*}}`)
	splitMappingFunctionRegEx          = regexp.MustCompile(`{{\s*[sS]plit\s*\((.*)\)\s*}}`)
	randomMappingFunctionRegEx         = regexp.MustCompile(`{{\s*[rR]andom\s*\((.*)\)\s*}}`)
)
"""
GO_2_14_10 = (
    "var (\n"
    r"	accountHashMappingFunctionRegEx = regexp.MustCompile(`{{\s*[aA]ccount-[hH]ash\s*\((.*)\)\s*}}`)"
    "\n"
    r"	accountHashLeafRemoteMappingFunctionRegEx = regexp.MustCompile("
    r"`{{\s*[aA]ccount-[hH]ash-[lL]eaf-[rR]emote\s*\((.*)\)\s*}}`)"
    "\n)\n"
)
GO_NEXT = r"var tenantHashMappingFunctionRegEx = regexp.MustCompile(`{{\s*[tT]enant-[hH]ash\s*\((.*)\)\s*}}`)"
"""A function no release has: what a release the reference has no rules for yet may add."""
STREAM_GO = """
type StreamConfig struct {
	Name             string                  `json:"name"`
	Mirror           *StreamSource           `json:"mirror,omitempty"`
	Sources          []*StreamSource         `json:"sources,omitempty"`
	SubjectTransform *SubjectTransformConfig `json:"subject_transform,omitempty"`
	RePublish        *RePublish              `json:"republish,omitempty"`
}

type SubjectTransformConfig struct {
	Source      string `json:"src"`
	Destination string `json:"dest"`
}

type StreamSource struct {
	Name              string                   `json:"name"`
	SubjectTransforms []SubjectTransformConfig `json:"subject_transforms,omitempty"`

	// Internal
	iname string // For indexing when stream names are the same for multiple sources.
	skip  bool   `json:"-"`
}

type RePublish struct {
	Source      string `json:"src,omitempty"`
	Destination string `json:"dest"`
}
"""
OPTS_GO = """
func parseExportStreamOrService(v any, errors *[]error) (*export, *export, error) {
	for mk, mv := range vv {
		tk, mv := unwrapValue(mv, &lt)
		switch strings.ToLower(mk) {
		case "stream":
			curStream = &export{}
		case "response", "response_type":
			switch strings.ToLower(mvs) {
			case "single", "singleton":
				rt = Singleton
			}
		case "accounts":
			accounts = mv
		}
	}
	return curStream, curService, nil
}

func parseAccountMapDest(v any, tk token, errors *[]error) (*MapDest, *configErr) {
	for k, v := range mv {
		switch strings.ToLower(k) {
		case "dest", "destination":
			mdest.Subject = dmv.(string)
		case "weight":
			switch vv := dmv.(type) {
			case string:
			}
		}
	}
}
"""
ERRORS_JSON = json.dumps(
    [
        {"constant": "JSClusterPeerNotMemberErr", "code": 400, "error_code": 10040, "description": "x"},
        {"constant": "JSStreamMoveInProgressF", "code": 400, "error_code": 10124, "description": "y"},
    ]
)


def test_function_names_of_every_shape() -> None:
    assert functions_in(GO_2_8) == {"partition", "wildcard"}
    assert functions_in(GO_2_12) == {
        "partition",
        "splitFromLeft",
        "split",
        "random",
    }  # the reference's spelling
    assert functions_in(GO_2_14_10) == {"account-hash", "account-hash-leaf-remote"}
    assert functions_in("x := `{{partition(1)}}`") == frozenset()


def test_struct_keys_and_the_stream_fields_typed_by_them() -> None:
    assert struct_keys_in(STREAM_GO) == {
        "StreamConfig": {"mirror", "sources", "subject_transform", "republish"},
        "SubjectTransformConfig": {"src", "dest"},
        "StreamSource": {"name", "subject_transforms"},
        "RePublish": {"src", "dest"},
    }


def test_config_file_keys_leave_out_a_nested_switch_on_a_value() -> None:
    assert switch_keys_in(OPTS_GO) == {
        "exports": {"stream", "response", "response_type", "accounts"},
        "mappings": {"dest", "destination", "weight"},
    }


def test_error_codes() -> None:
    assert error_codes_in(ERRORS_JSON) == {
        "JSClusterPeerNotMemberErr": 10040,
        "JSStreamMoveInProgressF": 10124,
    }


def source(tmp_path: Path, transform: tuple[str, str], errors: str = "") -> Path:
    """A module source holding the transform parser in `transform` (file, text) and stream.go."""
    for path, text in (transform, ("server/stream.go", STREAM_GO), ("server/errors.json", errors)):
        if text:
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text(text)
    return tmp_path


def test_a_source_before_2_10_keeps_its_functions_in_accounts_go(tmp_path: Path) -> None:
    surface = surface_in(source(tmp_path, ("server/accounts.go", GO_2_8)), "2.8.4")
    assert surface.functions == {"partition", "wildcard"}
    assert surface.error_codes == {}
    assert surface.config_keys["RePublish"] == {"src", "dest"}


def test_diff_and_what_the_reference_does_not_model() -> None:
    old = Surface(
        "2.14.9", frozenset({"split"}), {"JSStreamMoveInProgressF": 10124}, {"RePublish": frozenset({"src"})}
    )
    new = Surface(
        "2.14.10",
        frozenset({"split", "account-hash"}),
        {"JSStreamMoveInProgressErr": 10124},
        {"RePublish": frozenset({"src", "dest"})},
    )
    changes = diff(old, new)
    assert changes.added == {
        "functions": {"account-hash"},
        "error codes": {"JSStreamMoveInProgressErr (10124)"},
        "config keys": {"RePublish.dest"},
    }
    assert changes.removed == {
        "functions": frozenset(),
        "error codes": {"JSStreamMoveInProgressF (10124)"},
        "config keys": frozenset(),
    }
    assert unmodelled(new, "2.14.10") == frozenset()
    assert unmodelled(new, "2.15.2") == {"account-hash"}  # the 2.15 line has it from 2.15.3
    assert unmodelled(replace(new, functions=new.functions | {"tenant-hash"}), "2.14.10") == {"tenant-hash"}
    # The reference dates left/right to 2.10.16; 2.10.15's parser already has them.
    early = Surface("2.10.15", frozenset({"left", "right", "split"}), {}, {})
    assert unmodelled(early, "2.10.15") == {"left", "right"}
    assert unmodelled(early, "2.10.16") == frozenset()


def test_the_command_prints_one_line_each_and_writes_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    trees = {
        "2.14.9": source(tmp_path / "old", ("server/subject_transform.go", GO_2_12), ERRORS_JSON),
        "2.14.10": source(
            tmp_path / "new", ("server/subject_transform.go", GO_2_12 + GO_2_14_10 + GO_NEXT), ERRORS_JSON
        ),
    }
    monkeypatch.setattr(nats_conformance.suites.surface, "module_source", trees.__getitem__)
    assert main(["surface", "2.14.9", "2.14.10", "--json", str(tmp_path / "diff.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "2.14.10 adds functions the reference does not model: tenant-hash"
    assert "functions added in 2.14.10: account-hash, account-hash-leaf-remote, tenant-hash" in lines
    assert "functions removed since 2.14.9: none" in lines
    assert "error codes added in 2.14.10: none" in lines
    written = json.loads((tmp_path / "diff.json").read_text())
    assert written["added"]["functions"] == ["account-hash", "account-hash-leaf-remote", "tenant-hash"]
    assert written["unmodelled"] == ["tenant-hash"]


@pytest.mark.parametrize(
    ("release", "says"), [("foo", "invalid nats-server version"), ("system", "surface reads")]
)
def test_a_bad_release_is_one_line(release: str, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["surface", release, "2.14.10"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("nats-conformance: error: ")
    assert says in error
    assert error.count("\n") == 1


def test_an_unreachable_module_proxy_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "modules"))
    monkeypatch.setenv("GOPROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NATS_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    assert main(["surface", "2.14.9", "2.14.10"]) == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith("nats-conformance: error: downloading the source of nats-server v2.14.9 failed: ")
    assert "connection refused" in error
