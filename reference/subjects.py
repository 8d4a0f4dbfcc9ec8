"""Subjects: tokens, wildcards, and which strings are valid (docs.nats.io, "Subject-Based Messaging", https://docs.nats.io/nats-concepts/subjects).

Documented rules (section "Characters allowed and recommended for subject names" and "Wildcards"):

* a subject is tokens separated by ``.``; no token is empty;
* allowed characters are any Unicode except null, space, ``.``, ``*`` and ``>``;
* ``*`` (one token) and ``>`` (one or more tokens, last only) are wildcards, never part of a token
  ("``*`` cannot match a substring inside a token", ``time.New*.east``);
* publishers always use a fully specified subject: no wildcards.

Where the document is silent or differs, the live server decides; observed on 2.9.25-2.14.5:

* the server also rejects tab, CR, LF and form feed (the document names only the space);
* the server *accepts* ``*``/``>`` and null inside a longer token (``foo.a*b`` is a literal token), which
  the document forbids: :func:`is_server_valid_subject` states the server rule, used for mapping sources;
* pedantic mode (document section "Pedantic mode") checks only empty tokens and wildcard tokens, and it
  answers ``-ERR 'Invalid Publish Subject'`` but still routes the message (``foo.*`` is delivered as a
  literal). A raw ``CONNECT`` without a ``pedantic`` field gets pedantic mode (the server's default).
"""

from __future__ import annotations

from typing import Final

SEPARATOR: Final = "."
PARTIAL_WILDCARD: Final = "*"
FULL_WILDCARD: Final = ">"

_WILDCARDS: Final = (PARTIAL_WILDCARD, FULL_WILDCARD)
_SERVER_WHITESPACE: Final = frozenset(" \t\n\r\f")
_DOCUMENT_FORBIDDEN: Final = frozenset(" \t\n\r\f\x00*>")


def tokenize(subject: str) -> list[str]:
    """Split a subject into its tokens on ``.`` ("Subject-Based Messaging" - "Subject Hierarchies",
    https://docs.nats.io/nats-concepts/subjects#subject-hierarchies); keeps empty tokens."""
    return subject.split(SEPARATOR)


def is_valid_subject(subject: str) -> bool:
    """True iff ``subject`` is a valid subject by the document, wildcards allowed.

    Rules: non-empty tokens; ``*`` and ``>`` only as whole tokens, ``>`` only last; no token contains
    null, ``*``, ``>`` or whitespace (space per the document; tab, CR, LF, FF as observed).
    """
    if not subject:
        return False
    tokens = subject.split(SEPARATOR)
    last = len(tokens) - 1
    for i, token in enumerate(tokens):
        if token == PARTIAL_WILDCARD:
            continue
        if token == FULL_WILDCARD:
            if i != last:
                return False
            continue
        if not token or not _DOCUMENT_FORBIDDEN.isdisjoint(token):
            return False
    return True


def is_valid_publish_subject(subject: str) -> bool:
    """True iff ``subject`` is a valid literal subject by the document: valid and without wildcards
    ("Publishers will always use a fully specified subject, without the wildcard")."""
    if not subject:
        return False
    for token in subject.split(SEPARATOR):
        if not token or not _DOCUMENT_FORBIDDEN.isdisjoint(token):
            return False
    return True


def is_engine_valid_subject(subject: str) -> bool:
    """True iff the bare transform engine takes ``subject`` as a source: non-empty tokens, ``>`` only as
    the last token. The documents are silent on the engine's own input checks (they describe mappings),
    so its code decides: ``subjectInfo`` in nats-server's ``server/subject_transform.go``
    (https://github.com/nats-io/nats-server), which does not look at whitespace.
    """
    if not subject:
        return False
    full_wildcard_seen = False
    for token in subject.split(SEPARATOR):
        if not token or full_wildcard_seen:
            return False
        full_wildcard_seen = token == FULL_WILDCARD
    return True


def is_server_valid_subject(subject: str) -> bool:
    """True iff the server accepts ``subject`` as a subject, wildcards allowed (observed on 2.2.6-2.14.5).

    The engine's rule (:func:`is_engine_valid_subject`) and no space/tab/CR/LF/FF in any token. ``*``,
    ``>`` and null inside a longer token are accepted as literal characters, unlike the document (see
    :func:`is_valid_subject`). Mapping sources are checked with this rule.
    """
    return _SERVER_WHITESPACE.isdisjoint(subject) and is_engine_valid_subject(subject)


def is_pedantic_valid(subject: str) -> bool:
    """True iff a pedantic connection publishes ``subject`` without ``-ERR 'Invalid Publish Subject'``.

    Document section "Pedantic mode": pedantic mode checks subject names on publish. Observed on
    2.9.25-2.14.5: the check is non-empty tokens and no whole-token ``*``/``>``; ``foo.a*b`` and null
    bytes pass; the message is routed even when the error is sent.
    """
    return all(token and token not in _WILDCARDS for token in subject.split(SEPARATOR))


def is_message_subject(subject: str) -> bool:
    """True iff a message can travel on ``subject``: it is a subject ("a subject is one or more tokens
    separated by ``.``", so no token is empty and the subject is not empty) with no wildcard token
    ("Publishers will always use a fully specified subject, without the wildcard"), "Subject-Based
    Messaging", https://docs.nats.io/nats-concepts/subjects.

    This is the rule for what a transform *writes* (``Transform.delivers``): a mapping that produces an
    empty token (a ``split`` of a token that is all separators, ``-a`` split on ``-`` gives ``.a``) has
    produced no subject, and no subscriber can receive it, since every subscription is a subject. So is
    it for what a connection that is not pedantic publishes (``a..b``): no subscription receives it. The
    characters inside the tokens are those of the mapping's destination and of the published subject,
    already checked when the mapping is compiled and when the subject is published.
    """
    return all(token and token not in _WILDCARDS for token in subject.split(SEPARATOR))


def has_wildcards(subject: str) -> bool:
    """True iff some token of ``subject`` is exactly ``*`` or ``>`` ("Subject-Based Messaging" - "Wildcards", https://docs.nats.io/nats-concepts/subjects#wildcards)."""
    return any(token in _WILDCARDS for token in subject.split(SEPARATOR))
