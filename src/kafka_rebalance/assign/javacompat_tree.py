"""Red-black tree bins of `java.util.HashMap` (its `TreeNode`), emulated node for node.

A bin that reaches 8 entries in a table of 64+ slots becomes a red-black tree
whose `next`-linked order (what iteration follows) changes as the tree does:
treeify moves the root to the front, putTreeVal links a new node right after
its tree parent, removeTreeNode unlinks and may untreeify. `TreeBin.order` is
that linked order. The key comparison (`compareComparables`, then
`tieBreakOrder`) is passed in by `javacompat`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Compare = Callable[[Any, Any], int]


class _Node:
    __slots__ = ("key", "h", "parent", "left", "right", "red")

    def __init__(self, key: Any, h: int) -> None:
        self.key = key
        self.h = h
        self.parent: _Node | None = None
        self.left: _Node | None = None
        self.right: _Node | None = None
        self.red = False


def _rotate_left(root, p):
    if p is not None and p.right is not None:
        r = p.right
        rl = p.right = r.left
        if rl is not None:
            rl.parent = p
        pp = r.parent = p.parent
        if pp is None:
            root = r
            r.red = False
        elif pp.left is p:
            pp.left = r
        else:
            pp.right = r
        r.left = p
        p.parent = r
    return root


def _rotate_right(root, p):
    if p is not None and p.left is not None:
        l = p.left  # noqa: E741
        lr = p.left = l.right
        if lr is not None:
            lr.parent = p
        pp = l.parent = p.parent
        if pp is None:
            root = l
            l.red = False
        elif pp.right is p:
            pp.right = l
        else:
            pp.left = l
        l.right = p
        p.parent = l
    return root


def _balance_insertion(root, x):
    x.red = True
    while True:
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        xpp = xp.parent
        if not xp.red or xpp is None:
            return root
        xppl = xpp.left
        if xp is xppl:
            xppr = xpp.right
            if xppr is not None and xppr.red:
                xppr.red = False
                xp.red = False
                xpp.red = True
                x = xpp
            else:
                if x is xp.right:
                    x = xp
                    root = _rotate_left(root, x)
                    xp = x.parent
                    xpp = None if xp is None else xp.parent
                if xp is not None:
                    xp.red = False
                    if xpp is not None:
                        xpp.red = True
                        root = _rotate_right(root, xpp)
        else:
            if xppl is not None and xppl.red:
                xppl.red = False
                xp.red = False
                xpp.red = True
                x = xpp
            else:
                if x is xp.left:
                    x = xp
                    root = _rotate_right(root, x)
                    xp = x.parent
                    xpp = None if xp is None else xp.parent
                if xp is not None:
                    xp.red = False
                    if xpp is not None:
                        xpp.red = True
                        root = _rotate_left(root, xpp)


def _balance_deletion(root, x):
    while True:
        if x is None or x is root:
            return root
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        if x.red:
            x.red = False
            return root
        xpl = xp.left
        if xpl is x:
            xpr = xp.right
            if xpr is not None and xpr.red:
                xpr.red = False
                xp.red = True
                root = _rotate_left(root, xp)
                xp = x.parent
                xpr = None if xp is None else xp.right
            if xpr is None:
                x = xp
            else:
                sl, sr = xpr.left, xpr.right
                if (sr is None or not sr.red) and (sl is None or not sl.red):
                    xpr.red = True
                    x = xp
                else:
                    if sr is None or not sr.red:
                        if sl is not None:
                            sl.red = False
                        xpr.red = True
                        root = _rotate_right(root, xpr)
                        xp = x.parent
                        xpr = None if xp is None else xp.right
                    if xpr is not None:
                        xpr.red = False if xp is None else xp.red
                        sr = xpr.right
                        if sr is not None:
                            sr.red = False
                    if xp is not None:
                        xp.red = False
                        root = _rotate_left(root, xp)
                    x = root
        else:
            if xpl is not None and xpl.red:
                xpl.red = False
                xp.red = True
                root = _rotate_right(root, xp)
                xp = x.parent
                xpl = None if xp is None else xp.left
            if xpl is None:
                x = xp
            else:
                sl, sr = xpl.left, xpl.right
                if (sl is None or not sl.red) and (sr is None or not sr.red):
                    xpl.red = True
                    x = xp
                else:
                    if sl is None or not sl.red:
                        if sr is not None:
                            sr.red = False
                        xpl.red = True
                        root = _rotate_left(root, xpl)
                        xp = x.parent
                        xpl = None if xp is None else xp.left
                    if xpl is not None:
                        xpl.red = False if xp is None else xp.red
                        sl = xpl.left
                        if sl is not None:
                            sl.red = False
                    if xp is not None:
                        xp.red = False
                        root = _rotate_right(root, xp)
                    x = root


class TreeBin:
    """One treeified bin: the red-black tree plus its `next`-linked order (a list)."""

    __slots__ = ("root", "order", "nodes", "compare")

    def __init__(self, keys_hashes: list[tuple[Any, int]], compare: Compare) -> None:
        self.compare = compare
        self.order: list[_Node] = [_Node(k, h) for k, h in keys_hashes]
        self.nodes: dict[Any, _Node] = {n.key: n for n in self.order}
        self.root: _Node | None = None
        self._treeify()

    def _treeify(self) -> None:
        root = None
        for x in self.order:
            x.left = x.right = None
            if root is None:
                x.parent = None
                x.red = False
                root = x
                continue
            k, h = x.key, x.h
            p: _Node = root
            while True:
                ph = p.h
                if ph > h:
                    d = -1
                elif ph < h:
                    d = 1
                else:
                    d = self.compare(k, p.key)
                xp = p
                nxt = p.left if d <= 0 else p.right
                if nxt is None:
                    x.parent = xp
                    if d <= 0:
                        xp.left = x
                    else:
                        xp.right = x
                    root = _balance_insertion(root, x)
                    break
                p = nxt
        self.root = root
        self._move_root_to_front(root)

    def _move_root_to_front(self, root) -> None:
        order = self.order
        if root is not None and order and order[0] is not root:
            order.remove(root)
            order.insert(0, root)

    def put(self, key: Any, h: int) -> None:
        """putTreeVal for a key known to be absent."""
        root = self.root
        assert root is not None  # put is only called on a bin that is a tree
        p = root
        while True:
            ph = p.h
            if ph > h:
                d = -1
            elif ph < h:
                d = 1
            else:
                d = self.compare(key, p.key)
            xp = p
            nxt = p.left if d <= 0 else p.right
            if nxt is None:
                x = _Node(key, h)
                if d <= 0:
                    xp.left = x
                else:
                    xp.right = x
                x.parent = xp
                self.order.insert(self.order.index(xp) + 1, x)
                self.nodes[key] = x
                self.root = _balance_insertion(root, x)
                self._move_root_to_front(self.root)
                return
            p = nxt

    def remove(self, key: Any, movable: bool) -> bool:
        """removeTreeNode; returns True when the bin became a plain bin (or empty)."""
        p = self.nodes.pop(key)
        self.order.remove(p)
        if not self.order:
            return True
        root = self.root
        assert root is not None  # the bin still holds nodes
        if movable and (root.right is None or root.left is None or root.left.left is None):
            return True
        pl, pr = p.left, p.right
        if pl is not None and pr is not None:
            s = pr
            while s.left is not None:
                s = s.left
            s.red, p.red = p.red, s.red
            sr = s.right
            pp = p.parent
            if s is pr:
                p.parent = s
                s.right = p
            else:
                sp = s.parent
                p.parent = sp
                if sp is not None:
                    if s is sp.left:
                        sp.left = p
                    else:
                        sp.right = p
                s.right = pr
                if pr is not None:
                    pr.parent = s
            p.left = None
            p.right = sr
            if sr is not None:
                sr.parent = p
            s.left = pl
            if pl is not None:
                pl.parent = s
            s.parent = pp
            if pp is None:
                root = s
            elif p is pp.left:
                pp.left = s
            else:
                pp.right = s
            replacement = sr if sr is not None else p
        elif pl is not None:
            replacement = pl
        elif pr is not None:
            replacement = pr
        else:
            replacement = p
        if replacement is not p:
            pp = replacement.parent = p.parent
            if pp is None:
                root = replacement
                replacement.red = False
            elif p is pp.left:
                pp.left = replacement
            else:
                pp.right = replacement
            p.left = p.right = p.parent = None
        r = root if p.red else _balance_deletion(root, replacement)
        if replacement is p:
            pp = p.parent
            p.parent = None
            if pp is not None:
                if p is pp.left:
                    pp.left = None
                elif p is pp.right:
                    pp.right = None
        self.root = r
        if movable:
            self._move_root_to_front(r)
        return False
