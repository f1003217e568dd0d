"""Every st.session_state key in one place: one class per page.

Results are kept under these keys so they persist while the user moves between
pages; the home page reads ``Home.LAST_RESULTS`` to list the session's audits.
"""

__all__ = ["AUTORUN", "DpClaim", "Fabrication", "Generators", "Home", "Lira", "OwnModel", "ScoreCheck", "Synthetic"]


class Home:
    LAST_RESULTS = "home.last_results"  # dict[page title -> {"headline", "metrics", "time"}]


class Synthetic:
    AUTORUN = "synthetic.autorun"  # set by the home page's "Run on the sample" button
    RESULT = "synthetic.result"  # the last ui.run.Request (tables, settings, seed); the result store holds its outcome
    SOURCE = "synthetic.source"
    BANDWIDTH = "synthetic.bandwidth"  # bandwidth multiplier slider: re-scores, never recomputes distances
    PRIOR = "synthetic.prior"  # prior slider: re-scores, never recomputes distances
    BANDWIDTH_RULE = "synthetic.bandwidth_rule"  # silverman / scott / cv: re-scores too
    SEED = "synthetic.seed"
    COLUMNS = "synthetic.columns"  # prefix of the column-type editor's key (one editor per data source)
    UPLOAD = "synthetic.upload"  # prefix of the upload widgets' keys
    EXPOSED_BY = "synthetic.exposed_by"
    EXPLAIN = "synthetic.explain"
    DISCLOSURE = "synthetic.disclosure"  # prefix of the disclosure form's widgets (roles, attacks, k)
    ASKED = "synthetic.asked"  # a request from the disclosure form, run on the next rerun
    GROUPS = "synthetic.groups"  # the column of the risk-by-group table: re-scores, never recomputes distances
    DATABASE = "synthetic.database"  # prefix of the database URL fields' keys (one per table)


class Generators:
    AUTORUN = "generators.autorun"  # set by the home page's "Run on the sample" button
    RESULT = "generators.result"  # the last ui.run.Request; the result store holds its outcome and the fits
    SOURCE = "generators.source"
    BANDWIDTH = "generators.bandwidth"
    PRIOR = "generators.prior"
    ASKED = "generators.asked"  # a request from the shadow-attack form, run on the next rerun
    SHADOW = "generators.shadow"  # prefix of the shadow-attack form's widgets
    DATABASE = "generators.database_url"


class Lira:
    AUTORUN = "lira.autorun"  # set by the home page's "Run on the sample" button
    RESULT = "lira.result"  # the last ui.run.Request; the result store holds the trained models and the outcome
    SOURCE = "lira.source"
    FPR = "lira.fpr"  # alpha slider: re-evaluates the trained models, never retrains them
    GROUPS = "lira.groups"  # the column of the risk-by-group table: re-scores, never retrains
    DATABASE = "lira.database_url"


class Fabrication:
    AUTORUN = "fabrication.autorun"  # set by the home page's "Run on the sample" button
    RESULT = "fabrication.result"  # the last ui.run.Request; the result store holds the trained models and the outcome
    SOURCE = "fabrication.source"
    LAMBDA = "fabrication.lambda"  # AR-MIA lambda slider: re-scores, never re-attacks
    MIA = "fabrication.mia"  # which MIA the histograms / ROC / lambda plots show
    TRUST = "fabrication.trust_torchscript"  # the user confirmed they trust an uploaded TorchScript file
    FPR = "fabrication.fpr"  # target FPR of the TPR cards ("0.001", "0.01", "0.1"): re-scores only


class ScoreCheck:
    AUTORUN = "score_check.autorun"  # set by the home page's "Run on the sample" button
    RESULT = "score_check.result"  # the last ui.run.Request
    SOURCE = "score_check.source"
    UPLOAD = "score_check.upload"


class OwnModel:
    AUTORUN = "own_model.autorun"  # set by the home page's "Run on the sample" button
    RESULT = "own_model.result"  # the last ui.run.Request
    SOURCE = "own_model.source"
    UPLOAD = "own_model.upload"  # prefix of the upload widgets' keys
    DATABASE = "own_model.database"  # prefix of the members' and population's database URL fields' keys


class DpClaim:
    AUTORUN = "dp_claim.autorun"  # set by the home page's "Run on the sample" button
    RESULT = "dp_claim.result"  # the last ui.run.Request
    SOURCE = "dp_claim.source"
    UPLOAD = "dp_claim.upload"
    MODE = "dp_claim.mode"  # train here with DP-SGD, or an uploaded model with its canary file
    UPLOADED_RESULT = "dp_claim.uploaded_result"  # the uploaded-model mode's last ui.run.Request
    UPLOADED = "dp_claim.uploaded"  # prefix of the uploaded-model mode's widgets' keys


AUTORUN: dict[str, str] = {
    "tabular": Synthetic.AUTORUN,
    "compare": Generators.AUTORUN,
    "lira": Lira.AUTORUN,
    "fabrication": Fabrication.AUTORUN,
    "scores": ScoreCheck.AUTORUN,
    "dp-audit": DpClaim.AUTORUN,
    "model": OwnModel.AUTORUN,
}
"""The "Run on the sample" flag of each registered audit's page (audit_core.registry), by audit name."""
