import codecs
import json

from django.utils.http import parse_header_parameters
from rest_framework.exceptions import ParseError, UnsupportedMediaType
from rest_framework.parsers import JSONParser


def _charset_refusal(media_type: str | None) -> str | None:
    """Why the `charset` of the Content-Type cannot decode a JSON text, or None if it can.

    Python also registers bytes-to-bytes and str-to-str codecs (zlib, bz2, base64, rot13, ...)
    under encoding names; decoding a body with them fails with TypeError, zlib.error or OSError
    instead of ValueError. Django ignores a charset it does not know and decodes as UTF-8; we
    refuse it, as a client that names a charset expects it to be used.
    """
    _, params = parse_header_parameters(media_type or "")
    charset = params.get("charset")
    if charset is None:
        return None
    try:
        codec = codecs.lookup(charset)
    except LookupError:
        return f"Unknown charset '{charset}'."
    if not codec._is_text_encoding:
        return f"The charset '{charset}' is not a text encoding."
    return None


class JSONObjectParser(JSONParser):
    """JSON bodies must be objects: a list, string or number at the top level is a 400.

    A charset that is not a known text encoding is 415 (RFC 9110 §15.5.16: the format named by
    Content-Type is not supported); a body the declared charset cannot decode is 400.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        refusal = _charset_refusal(media_type)
        if refusal is not None:
            raise UnsupportedMediaType(media_type, detail=f"{refusal} Send UTF-8 JSON.")
        try:
            data = super().parse(stream, media_type, parser_context)
        except ParseError:
            raise
        except RecursionError:
            # json gives up on very deep nesting with RecursionError, not ValueError.
            raise ParseError("The JSON body is nested too deeply.") from None
        except Exception as error:
            # Only the codec and json run here: whatever else escapes is the body's fault, and
            # a malformed body must never become a 500.
            raise ParseError(f"The body cannot be decoded: {type(error).__name__}.") from None
        if not isinstance(data, dict):
            raise ParseError("The JSON body must be an object.")
        try:
            # JSON may escape lone surrogates ("\ud800"), which no database column can store.
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ParseError("The JSON body contains invalid Unicode (a lone surrogate).") from None
        except RecursionError:
            raise ParseError("The JSON body is nested too deeply.") from None
        return data
