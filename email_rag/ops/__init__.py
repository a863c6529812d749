"""Operations views: health and metrics."""
