"""LaTeX command names a model writes in math and prose (without the backslash).

Used to tell `\\frac` written with one backslash in a JSON string (form feed +
"rac") from a real control character. Commands from the LaTeX kernel, amsmath
and amssymb that appear in math solutions, grouped for review; `\\n` and `\\t`
escapes are read as LaTeX only when the whole letter run is one of these names.
"""

from __future__ import annotations

_GREEK = """
alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa varkappa lambda mu nu xi
omicron pi varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega
Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega digamma
"""

_STRUCTURE = """
frac dfrac tfrac cfrac sqrt binom dbinom tbinom choose boxed fbox overline underline overbrace underbrace
hat widehat bar tilde widetilde vec dot ddot acute grave breve check mathring overrightarrow overleftarrow
left right big Big bigg Bigg bigl bigr Bigl Bigr biggl biggr middle
begin end item label ref eqref tag notag nonumber newline linebreak newcommand renewcommand displaystyle
textstyle scriptstyle limits nolimits operatorname stackrel overset underset substack phantom hphantom
vphantom quad qquad hspace vspace thinspace medspace thickspace negthinspace enspace mbox hbox raisebox
noindent par cdots ldots dots vdots ddots dotsc dotsb dotsm centerdot
"""

_FONTS = """
text textbf textit textrm texttt textsf textsc textup textsl textnormal emph mathrm mathbf mathit mathsf
mathtt mathcal mathbb mathfrak mathscr mathnormal boldsymbol bm pmb rm bf it tt sf cal
tiny small normalsize large Large huge Huge color textcolor
"""

_OPERATORS = """
sum prod coprod int iint iiint oint bigcup bigcap bigsqcup bigvee bigwedge bigoplus bigotimes bigodot
lim limsup liminf sup inf max min arg argmax argmin det dim exp gcd hom ker lg ln log deg Pr mod bmod pmod pod
sin cos tan cot sec csc sinh cosh tanh coth arcsin arccos arctan
times div cdot pm mp ast star circ bullet oplus ominus otimes oslash odot cap cup sqcap sqcup vee wedge
setminus smallsetminus wr amalg dagger ddagger triangleleft triangleright bigtriangleup bigtriangledown
ltimes rtimes lhd rhd unlhd unrhd
"""

_RELATIONS = """
le leq ge geq ne neq lt gt leqslant geqslant ll gg lll ggg approx approxeq equiv cong sim simeq asymp
propto doteq models perp parallel mid nmid nparallel subset supset subseteq supseteq subsetneq supsetneq
nsubseteq nsupseteq sqsubset sqsupset sqsubseteq sqsupseteq in ni notin owns not nless ngtr nleq ngeq
nsim ncong prec succ preceq succeq vdash dashv nvdash models lesssim gtrsim triangleq coloneqq
"""

_ARROWS = """
to gets leftarrow rightarrow Leftarrow Rightarrow leftrightarrow Leftrightarrow longleftarrow longrightarrow
Longleftarrow Longrightarrow longleftrightarrow Longleftrightarrow iff implies impliedby mapsto longmapsto
uparrow downarrow Uparrow Downarrow updownarrow nearrow searrow swarrow nwarrow hookrightarrow
hookleftarrow rightharpoonup rightleftharpoons twoheadrightarrow nrightarrow nleftarrow nRightarrow
nLeftarrow nleftrightarrow
"""

_SYMBOLS = """
infty partial nabla forall exists nexists emptyset varnothing neg lnot top bot angle measuredangle
triangle square blacksquare Box diamond clubsuit heartsuit spadesuit diamondsuit aleph beth hbar ell wp Re Im
prime backslash therefore because checkmark natural sharp flat degree circledS surd
langle rangle lceil rceil lfloor rfloor lvert rvert lVert rVert vert Vert lbrace rbrace lbrack rbrack
cdotp colon ldotp
"""

LATEX_COMMANDS: frozenset[str] = frozenset(
    " ".join((_GREEK, _STRUCTURE, _FONTS, _OPERATORS, _RELATIONS, _ARROWS, _SYMBOLS)).split()
)
