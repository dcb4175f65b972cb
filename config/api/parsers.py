import json

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class JSONObjectParser(JSONParser):
    """JSON bodies must be objects: a list, string or number at the top level is a 400."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            # json gives up on very deep nesting with RecursionError, not ValueError.
            raise ParseError("The JSON body is nested too deeply.") from None
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
