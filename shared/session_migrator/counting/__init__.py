"""The counting layer: token counts. tiktoken's encodings loaded offline (``_encodings``), the
counters, exact or estimated per family (``_tokens``, ``_heuristic``), what images cost
(``_image_tokens``), calibration of estimates (``_calibration``, ``_recalibration``) and the
providers' count endpoints (``_online_counters``).

It imports the models, messages and base layers only.
"""
