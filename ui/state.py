"""Every st.session_state key in one place: one class per page.

Results are kept under these keys so they persist while the user moves between
pages; the home page reads ``Home.LAST_RESULTS`` to list the session's audits.
"""


class Home:
    LAST_RESULTS = "home.last_results"  # dict[page title -> {"headline", "metrics", "time"}]


class Synthetic:
    RESULT = "synthetic.result"
    INPUTS = "synthetic.inputs"
    SOURCE = "synthetic.source"
    BANDWIDTH = "synthetic.bandwidth"
    PRIOR = "synthetic.prior"


class Generators:
    RESULT = "generators.result"
    SOURCE = "generators.source"


class Lira:
    RESULT = "lira.result"
    SOURCE = "lira.source"


class Fabrication:
    RESULT = "fabrication.result"
    SOURCE = "fabrication.source"
